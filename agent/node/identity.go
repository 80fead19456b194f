package node

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// AnnotationNodeID is the Node annotation that names the agent that
// registered it: the node ID in that agent's data dir. The node's Lease
// carries it too, beside a holderIdentity that is the node's name, as the
// kubelet's is.
const AnnotationNodeID = "berth.dev/node-id"

// nodeIDFile holds the agent's node ID in its data dir.
const nodeIDFile = "node-id"

// ClaimedError is the refusal to run as a node that another agent
// registered, as k3s refuses a second node of one name: two agents on one
// Node would each run the pods bound to it. The node ID tells a restart
// of the same agent (same data dir), which takes its Node back, from
// another machine given the same --node-name. It guards against a
// mistake, not an attacker: the ID is no secret.
type ClaimedError struct {
	// Node is the Node's name; ID is the node ID it carries, Own this
	// agent's.
	Node, ID, Own string
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("node %s is registered by another agent (node ID %s; this agent's is %s): "+
		"give this agent another --node-name, or, if the machine that registered it is gone, "+
		"delete the Node (berth delete node %s) and start this agent again", e.Node, e.ID, e.Own, e.Node)
}

// IsClaimed reports whether err is or holds a *ClaimedError: the
// one refusal that ends the agent rather than being tried again.
func IsClaimed(err error) bool {
	var claimed *ClaimedError
	return errors.As(err, &claimed)
}

// LoadID reads the agent's node ID from its data dir, making one on
// first start. The ID is written whole to a temporary file and linked into
// place, so that no one reads half of it and two agents starting on one
// data dir agree on it.
func LoadID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, nodeIDFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err = makeNodeID(path); err == nil || errors.Is(err, fs.ErrExist) {
			b, err = os.ReadFile(path)
		}
	}
	if err != nil {
		return "", fmt.Errorf("node ID: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", fmt.Errorf("node ID %s is empty: remove it to make a new one", path)
	}
	return id, nil
}

// makeNodeID writes a new random node ID at path, unless there is one.
func makeNodeID(path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+nodeIDFile+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(rand.Text() + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(f.Name(), path)
}
