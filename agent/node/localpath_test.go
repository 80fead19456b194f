package node

import (
	"testing"

	"github.com/berth-dev/berth/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodePublishesLocalPathRoot: the provisioner learns where a node's
// local-path volumes go from the Node the agent registers.
func TestNodePublishesLocalPathRoot(t *testing.T) {
	n := New(Options{Name: "n1", LocalPathRoot: "/var/lib/berth-agent/volumes"})
	node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	n.own(node)
	if got := node.Annotations[api.AnnotationLocalPathRoot]; got != "/var/lib/berth-agent/volumes" {
		t.Fatalf("annotation %s = %q", api.AnnotationLocalPathRoot, got)
	}
}
