package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
	"github.com/berth-dev/berth/testtool"
)

// TestFullDiskWritesResume runs `berth server` with its data dir on a
// real 8 MB tmpfs, mounted in a mount namespace of the test's own, and
// fills that file system: a write through the API fails, /readyz fails
// its store check while /livez stays 200. Once the filler is removed, with
// no restart, writes go through again and /readyz is 200; the write that
// failed is not in the store, those acknowledged before are.
func TestFullDiskWritesResume(t *testing.T) {
	testtool.NeedRoot(t, "mount a tmpfs in a mount namespace")
	unshare := testtool.Need(t, "unshare")
	dir := t.TempDir()
	args, url, dnsPort := serverArgs(t, dir)
	p := startProgram(t, unshare, append([]string{"--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs -o size=8m berth-test "$0" && exec "$@"`, dir, bin}, args...)...)
	// unshare and sh exec berth: the process is the server, and its root
	// seen through /proc is in its mount namespace, the tmpfs mounted.
	dataDir := fmt.Sprintf("/proc/%d/root%s", p.cmd.Process.Pid, dir)
	s := &server{process: p, dnsPort: dnsPort, dataDir: dataDir, url: url,
		kubeconfig: filepath.Join(dataDir, "admin.kubeconfig")}
	s.waitReady(t)
	var st syscall.Statfs_t
	if err := syscall.Statfs(dataDir, &st); err != nil || st.Blocks*uint64(st.Bsize) > 8<<20 {
		t.Fatalf("the data dir is not on the small tmpfs (%v, %d bytes)", err, st.Blocks*uint64(st.Bsize))
	}
	c := s.client(t)
	value := strings.Repeat("x", 256<<10)
	create := func(name string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := c.Create(ctx, &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Data: map[string]string{"v": value}})
		return err
	}
	if err := create("before"); err != nil {
		t.Fatal(err)
	}

	testtool.FillDisk(t, filepath.Join(dataDir, "filler"))
	// Write until the store's file can grow no more.
	var acked []string
	lost := ""
	for i := range 40 {
		name := fmt.Sprintf("c%d", i)
		err := create(name)
		if err == nil {
			acked = append(acked, name)
			continue
		}
		if !strings.Contains(err.Error(), "no space left on device") {
			t.Fatalf("write %s to a full disk: %v, want no space left on device", name, err)
		}
		lost = name
		break
	}
	if lost == "" {
		t.Fatal("40 writes of 256 KiB fit on a full 8 MB disk")
	}
	if code, body := s.status(t, "/readyz?verbose"); code == http.StatusOK ||
		!strings.Contains(body, "[-]store failed") || !strings.Contains(body, "no space left on device") {
		t.Errorf("/readyz with a full disk: %d\n%s", code, body)
	}
	if code, body := s.status(t, "/livez"); code != http.StatusOK {
		t.Errorf("/livez with a full disk: %d\n%s", code, body)
	}
	if err := create("refused"); err == nil {
		t.Error("a write was taken while the store cannot write")
	}

	if err := os.Remove(filepath.Join(dataDir, "filler")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "a write once the disk has room", func() error {
		return create("after")
	})
	if code, body := s.status(t, "/readyz?verbose"); code != http.StatusOK || !strings.Contains(body, "[+]store ok") {
		t.Errorf("/readyz once the store writes again: %d\n%s", code, body)
	}
	if !strings.Contains(s.Output(), "store writes again") {
		t.Error("the server did not log that the store writes again")
	}
	for _, name := range append(acked, "before", "after") {
		if _, err := c.Get(context.Background(), api.KindOf(&api.ConfigMap{}), "default", name); err != nil {
			t.Errorf("acknowledged %s: %v", name, err)
		}
	}
	for _, name := range []string{lost, "refused"} {
		if _, err := c.Get(context.Background(), api.KindOf(&api.ConfigMap{}), "default", name); err == nil {
			t.Errorf("refused %s is in the store", name)
		}
	}
}

// status is the HTTP status and body of a GET of path on the server.
func (s *server) status(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := s.httpClient(t).Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// httpClient is an HTTP client that trusts the server's CA and sends no
// credential; its connections close when the test ends.
func (s *server) httpClient(t *testing.T) *http.Client {
	t.Helper()
	cfg, err := client.LoadKubeconfig(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := client.NewTransport(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}
