package agent_test

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent"
	"github.com/berth-dev/berth/agent/node"
	"github.com/berth-dev/berth/agent/pods"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

func staticPod(t *testing.T, name, image, node string) *api.Pod {
	t.Helper()
	m := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}}}
	m.Spec.Containers = []api.Container{{Name: "main", Image: image, Command: []string{"/bin/sleep", "100"}}}
	p, err := agent.StaticPod(m, node, pods.ConfigSourceFile, "/etc/berth/manifests/"+name+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mirrors lists the pods bound to node, by name.
func (c *cluster) pods(t *testing.T, node string) map[string]*api.Pod {
	t.Helper()
	objs, _, err := c.Admin.List(context.Background(), api.KindOf(&api.Pod{}), "", client.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*api.Pod{}
	for _, o := range objs {
		out[o.GetName()] = o.(*api.Pod)
	}
	return out
}

func TestMirrorPods(t *testing.T) {
	c := startCluster(t)
	nc := c.Join(t, "n1")
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	if err := node.New(node.Options{Client: nc, Name: "n1", IP: "10.0.0.1", Clock: clk}).Register(ctx); err != nil {
		t.Fatal(err)
	}
	nodeUID := c.Node(t, "n1").UID

	// A pod the scheduler bound to the node is none of the mirrors'
	// business.
	plain := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "default"}}
	plain.Spec.NodeName = "n1"
	plain.Spec.Containers = []api.Container{{Name: "main", Image: "busybox"}}
	if _, err := c.Admin.Create(ctx, plain); err != nil {
		t.Fatal(err)
	}

	m := agent.NewMirrorManager(nc, "n1", slog.New(slog.DiscardHandler))
	web, db := staticPod(t, "web", "nginx", "n1"), staticPod(t, "db", "postgres", "n1")
	if err := m.Sync(ctx, []*api.Pod{web, db}); err != nil {
		t.Fatal(err)
	}
	got := c.pods(t, "n1")
	if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, []string{"db-n1", "plain", "web-n1"}) {
		t.Fatalf("pods %v", names)
	}
	for _, sp := range []*api.Pod{web, db} {
		mp := got[sp.Name]
		if mp.Annotations[api.AnnotationMirror] != string(sp.UID) || mp.Annotations[pods.AnnotationConfigHash] != string(sp.UID) {
			t.Errorf("%s annotations %v", sp.Name, mp.Annotations)
		}
		if mp.UID == sp.UID {
			t.Errorf("%s: the mirror took the static pod's UID", sp.Name)
		}
		refs := mp.OwnerReferences
		if len(refs) != 1 || refs[0].Kind != "Node" || refs[0].Name != "n1" || refs[0].UID != types.UID(nodeUID) {
			t.Errorf("%s owner references %+v", sp.Name, refs)
		}
		if mp.Spec.Containers[0].Image != sp.Spec.Containers[0].Image || mp.Labels["app"] != sp.Labels["app"] {
			t.Errorf("%s: mirror differs: %+v", sp.Name, mp.Spec.Containers)
		}
	}
	dbMirrorUID := got["db-n1"].UID

	// Nothing changed: nothing is written.
	if err := m.Sync(ctx, []*api.Pod{web, db}); err != nil {
		t.Fatal(err)
	}
	if again := c.pods(t, "n1"); again["web-n1"].ResourceVersion != got["web-n1"].ResourceVersion {
		t.Errorf("an unchanged mirror was written again")
	}

	// The static pod's status goes onto its mirror.
	start := metav1.NewTime(time.Now().Truncate(time.Second))
	status := api.PodStatus{Phase: api.PodRunning, HostIP: "10.0.0.1", PodIP: "10.0.0.1", StartTime: &start}
	if err := m.ReportStatus(ctx, web, status); err != nil {
		t.Fatal(err)
	}
	if p := c.pods(t, "n1")["web-n1"]; p.Status.Phase != api.PodRunning || p.Status.PodIP != "10.0.0.1" || p.Status.StartTime == nil {
		t.Errorf("mirror status %+v", p.Status)
	}

	// An edited static pod gets a new mirror; a dropped one loses its own.
	db2 := staticPod(t, "db", "postgres:17", "n1")
	if err := m.Sync(ctx, []*api.Pod{db2}); err != nil {
		t.Fatal(err)
	}
	got = c.pods(t, "n1")
	if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, []string{"db-n1", "plain"}) {
		t.Fatalf("pods %v", names)
	}
	if p := got["db-n1"]; p.UID == dbMirrorUID || p.Annotations[api.AnnotationMirror] != string(db2.UID) || p.Spec.Containers[0].Image != "postgres:17" {
		t.Errorf("db mirror not replaced: uid %s annotations %v", p.UID, p.Annotations)
	}
	// A status of the old version does not land on the new mirror.
	if err := m.ReportStatus(ctx, db, status); err != nil {
		t.Fatal(err)
	}
	if p := c.pods(t, "n1")["db-n1"]; p.Status.Phase == api.PodRunning {
		t.Error("the old version's status landed on the new mirror")
	}
	if err := m.ReportStatus(ctx, web, status); !client.IsNotFound(err) {
		t.Errorf("status of a pod with no mirror: %v, want not found", err)
	}

	// A mirror deleted by someone else is posted again.
	if _, err := c.Admin.Delete(ctx, api.KindOf(&api.Pod{}), "default", "db-n1", nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(ctx, []*api.Pod{db2}); err != nil {
		t.Fatal(err)
	}
	if p, ok := c.pods(t, "n1")["db-n1"]; !ok || p.Annotations[api.AnnotationMirror] != string(db2.UID) {
		t.Errorf("mirror not posted again: %v", ok)
	}

	// Another node's credential cannot post mirrors for n1.
	other := c.Join(t, "n2")
	if err := agent.NewMirrorManager(other, "n1", nil).Sync(ctx, []*api.Pod{web}); !client.IsForbidden(err) {
		t.Errorf("node n2 posting a mirror for n1: %v, want forbidden", err)
	}
}
