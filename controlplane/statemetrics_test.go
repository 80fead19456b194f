package controlplane

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/etcd"
	"github.com/berth-dev/berth/store/etcd/etcdtest"
	"github.com/berth-dev/berth/testtool"
)

// getPublic GETs a path of the running control plane without a token.
func getPublic(t *testing.T, cp *running, path string) (int, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cp.Credentials().CAPool}}}
	resp, err := hc.Get("https://" + cp.Addr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func scrapeServer(t *testing.T, cp *running) map[string]float64 {
	t.Helper()
	code, body := getPublic(t, cp, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	return testtool.ParseMetrics(t, strings.NewReader(body))
}

// TestStateMetrics runs a control plane on a bolt store with a real
// directory source and reads /metrics over HTTPS: the source's condition,
// objects, last sync and sync duration, the store's objects and file
// size, nodes by readiness, and the controllers' and scheduler's families;
// then a broken revision turns the source's condition False.
func TestStateMetrics(t *testing.T) {
	manifests := t.TempDir()
	write(t, filepath.Join(manifests, "a.yaml"), cm("a", "1"))
	write(t, filepath.Join(manifests, "b.yaml"), cm("b", "1"))
	spec, err := source.Parse("name=site," + manifests)
	if err != nil {
		t.Fatal(err)
	}
	cp := startControlPlane(t, t.TempDir(), StoreBolt, spec)
	ctx := context.Background()
	for _, n := range []*api.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "up"}, Status: api.NodeStatus{Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "down"}, Status: api.NodeStatus{Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionFalse}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "new"}},
	} {
		if _, err := cp.Store().Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}

	// The Source's status is written inside the apply, and the loop
	// records the sync's time and duration once the apply returns: a
	// scrape in between sees Ready=True before them, so wait for all
	// three.
	const (
		ready    = `berth_source_condition{name="site",status="True",type="Ready"}`
		lastSync = `berth_source_last_successful_sync_timestamp_seconds{name="site"}`
		syncs    = `berth_source_sync_duration_seconds_count{name="site"}`
	)
	var got map[string]float64
	poll(t, "the source's first sync in /metrics", func() error {
		got = scrapeServer(t, cp)
		if got[ready] != 1 || got[lastSync] <= 0 || got[syncs] <= 0 {
			return fmt.Errorf("%s = %v, %s = %v, %s = %v", ready, got[ready], lastSync, got[lastSync], syncs, got[syncs])
		}
		return nil
	})
	for series, want := range map[string]float64{
		`berth_source_condition{name="site",status="False",type="Ready"}`:   0,
		`berth_source_condition{name="site",status="Unknown",type="Ready"}`: 0,
		`berth_source_objects{name="site"}`:                                 2,
		`berth_store_objects{resource="configmaps"}`:                        2,
		`berth_store_objects{resource="namespaces"}`:                        4,
		`berth_nodes{ready="True"}`:                                         1,
		`berth_nodes{ready="False"}`:                                        1,
		`berth_nodes{ready="Unknown"}`:                                      1,
		`berth_leader_election_master_status`:                               1,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
	for _, series := range []string{
		`berth_store_db_total_size_in_bytes`,
		`berth_workqueue_adds_total{name="sources"}`,
		`berth_workqueue_adds_total{name="namespace"}`,
	} {
		if got[series] <= 0 {
			t.Errorf("%s = %v, want more than 0", series, got[series])
		}
	}
	for _, series := range []string{
		`berth_workqueue_depth{name="drift"}`,
		`berth_controller_reconcile_errors_total{controller="replicaset"}`,
		`berth_scheduler_pending_pods{queue="active"}`,
		`berth_scheduler_schedule_attempts_total{result="scheduled"}`,
	} {
		if _, ok := got[series]; !ok {
			t.Errorf("no %s in /metrics", series)
		}
	}
	if code, body := getPublic(t, cp, "/readyz?verbose"); code != http.StatusOK || !strings.Contains(body, "[+]store ok\n") || !strings.Contains(body, "[+]sources ok\n") {
		t.Errorf("/readyz?verbose: %d %s", code, body)
	}

	// A revision that does not parse is rejected: Ready turns False.
	write(t, filepath.Join(manifests, "b.yaml"), "kind: [")
	poll(t, "the rejected revision in /metrics", func() error {
		got = scrapeServer(t, cp)
		const notReady = `berth_source_condition{name="site",status="False",type="Ready"}`
		if got[notReady] != 1 || got[ready] != 0 {
			return fmt.Errorf("%s = %v, %s = %v", notReady, got[notReady], ready, got[ready])
		}
		return nil
	})
	if got[`berth_source_objects{name="site"}`] != 2 {
		t.Errorf("objects after a rejected revision = %v, want the 2 still applied", got[`berth_source_objects{name="site"}`])
	}
}

// A leader that lost the election says so in its metric the moment its
// store knows, before its server has stepped down.
func TestLeaderMetricTurnsZeroOnceDeposed(t *testing.T) {
	ep := etcdtest.Start(t)
	quiet := slog.New(slog.DiscardHandler)
	b, err := etcd.Open(context.Background(), etcd.Options{Endpoints: []string{ep}, LeaseTTL: time.Minute, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(b, store.Options{Logger: quiet})
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got := leading(st); got != 0 {
		t.Fatalf("a follower's leader metric: %v", got)
	}
	if err := st.Lead(ctx, "https://old.test"); err != nil {
		t.Fatal(err)
	}
	if got := leading(st); got != 1 {
		t.Fatalf("the leader's leader metric: %v", got)
	}
	// Another takes the election: the next commit is refused.
	if _, err := b.Client().Delete(ctx, b.Prefix()+"/leader", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}}); err == nil {
		t.Fatal("a deposed leader's write was taken")
	}
	if got := leading(st); got != 0 {
		t.Fatalf("the deposed leader's leader metric: %v, want 0", got)
	}
	// It steps down, and follows: still 0.
	if err := st.StepDown(); err != nil {
		t.Fatal(err)
	}
	if got := leading(st); got != 0 || !st.Following() {
		t.Fatalf("the leader metric after stepping down: %v (following %v), want 0", got, st.Following())
	}
}
