package apiserver_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/apiserver"
	"github.com/berth-dev/berth/client"
)

// TestServeManyWatchesOnOneConnection runs the server's own Serve (its
// HTTP/2 settings and write scheduler) with many watches and writes on
// one client connection: the connection is HTTP/2, every watch gets every
// event in order while requests come and go beside them, and Shutdown
// ends the watches.
func TestServeManyWatchesOnOneConnection(t *testing.T) {
	srv, st := bareServer(t, apiserver.Config{})
	url, caPEM := serveTLS(t, srv)
	tr, err := client.NewTransport(&client.Config{CAData: caPEM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	c := benchClient(t, url, caPEM, tr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	resp, err := c.Do(ctx, http.MethodGet, "/version", nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("protocol %s, want HTTP/2", resp.Proto)
	}
	if _, err := c.Create(ctx, &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		t.Fatal(err)
	}

	const watches, writes = 50, 40
	ws := make([]*client.Watcher, watches)
	for i := range ws {
		if ws[i], err = c.Watch(ctx, cmKind, "default", client.WatchOptions{ResourceVersion: fmt.Sprint(st.Revision())}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range writes {
		cm := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("c%d", i)}}
		if _, err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range ws {
		for j := range writes {
			ev, err := w.Next(ctx)
			if err != nil {
				t.Fatalf("watch %d, event %d: %v", i, j, err)
			}
			if want := fmt.Sprintf("c%d", j); ev.Type != client.Added || ev.Object.GetName() != want {
				t.Fatalf("watch %d, event %d: %s %s, want ADDED %s", i, j, ev.Type, ev.Object.GetName(), want)
			}
		}
	}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		if _, err := w.Next(ctx); err == nil {
			t.Fatalf("watch %d still delivers after Shutdown", i)
		}
	}
}
