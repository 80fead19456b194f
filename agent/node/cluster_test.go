package node_test

import (
	"testing"

	"github.com/berth-dev/berth/controlplane/cptest"
)

// cluster is cptest's control plane, with this package's readers of it.
type cluster struct{ *cptest.Cluster }

func startCluster(t *testing.T) *cluster {
	t.Helper()
	return &cluster{cptest.StartCluster(t)}
}
