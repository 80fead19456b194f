package volume

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// TestLocalPathVolumeNamesTheRelativeRoot: a relative root, from a class
// stored before validation refused it or from a node's annotation, is
// named as such, not reported as missing.
func TestLocalPathVolumeNamesTheRelativeRoot(t *testing.T) {
	claim := &api.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data", UID: "u1"}}
	for _, tt := range []struct {
		name, nodePath, nodeRoot string
		want                     string
	}{
		{"relative nodePath", "data/volumes", "/var/lib/berth/volumes", `class local: parameters[nodePath] "data/volumes" is not an absolute path`},
		{"relative node root", "", "volumes", `node n1: local-path root "volumes" (annotation berth.dev/local-path-root) is not an absolute path`},
		{"no root at all", "", "", "node n1 publishes no local-path root"},
		{"absolute nodePath", "/srv/fast", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			class := &api.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: api.LocalPathProvisioner}
			if tt.nodePath != "" {
				class.Parameters = map[string]string{api.LocalPathNodePath: tt.nodePath}
			}
			node := &api.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{}}}
			if tt.nodeRoot != "" {
				node.Annotations[api.AnnotationLocalPathRoot] = tt.nodeRoot
			}
			pv, err := LocalPathVolume(claim, class, node)
			if tt.want == "" {
				if err != nil || pv.Spec.Local.Path != "/srv/fast/pvc-u1" {
					t.Fatalf("%v %v", pv, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}
