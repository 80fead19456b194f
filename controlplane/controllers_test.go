package controlplane

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/event"
	ingressctl "github.com/berth-dev/berth/reconcile/ingress"
	"github.com/berth-dev/berth/sched"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/informer"
)

// TestControllerTable builds every row of the table: each names the
// controller it builds, and the node IPAM row builds one only when a
// cluster CIDR is configured.
func TestControllerTable(t *testing.T) {
	t.Parallel()
	st, err := store.New(store.Memory{}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srcs, err := newSources(nil, st, t.TempDir(), clock.RealClock{}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	deps := Deps{Store: st, Informers: informer.NewFactory(st, nil, nil), Events: event.NewWriter(st, event.Options{}),
		Scheduler: sched.New(st, sched.Options{}), Sources: srcs}
	// Two rows are optional: node IPAM runs with a cluster CIDR, the
	// Ingress controller with the Ingress proxy.
	for _, tc := range []struct {
		cidr    string
		ingress *IngressConfig
	}{{"", nil}, {DefaultClusterCIDR, &IngressConfig{}}} {
		cidr := tc.cidr
		deps.Config.ClusterCIDR, deps.Config.Ingress = tc.cidr, tc.ingress
		cs, err := buildControllers(context.Background(), controllerInits, deps)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range cs {
			names = append(names, c.Name())
		}
		var want []string
		for _, row := range controllerInits {
			switch {
			case row.name == "node-ipam-controller" && cidr == "":
			case row.name == ingressctl.Name && tc.ingress == nil:
			default:
				want = append(want, row.name)
			}
		}
		if !slices.Equal(names, want) {
			t.Errorf("--cluster-cidr %q: controllers %v, want the table's names %v", cidr, names, want)
		}
	}
}

// TestControllerTableError: a row that fails fails the build, named.
func TestControllerTableError(t *testing.T) {
	t.Parallel()
	inits := []namedInit{{"broken", func(context.Context, Deps) (*reconcile.Controller, error) {
		return nil, errors.New("no way")
	}}}
	_, err := buildControllers(context.Background(), inits, Deps{})
	if err == nil || err.Error() != "controller broken: no way" {
		t.Errorf("err %v, want controller broken: no way", err)
	}
}

// TestNewFailureReleasesStore: New failing at its last step (the API
// port is taken) closes what it opened, so that the next New opens the
// same bolt file rather than waiting for its lock.
func TestNewFailureReleasesStore(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Listen: taken.Addr().String(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if _, err := New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("New on a taken port: %v, want a listen error", err)
	}
	cfg.Listen = "127.0.0.1:0"
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New after a failed New: %v", err)
	}
	s.store.Close()
	s.listener.Close()
}
