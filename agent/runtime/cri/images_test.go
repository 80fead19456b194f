package cri_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/agent/runtime/cri"
	"github.com/berth-dev/berth/agent/runtime/cri/critest"
	"github.com/berth-dev/berth/testtool"
)

// TestContainerdRegistriesAndImportedImages starts containerd with a
// registries.yaml, whose mirror of a registry that does not exist is the
// test's plain-http registry, and a directory of image archives imported
// at start: the mirror serves the pull, the archive's image runs with pull
// policy Never, and what is no archive is refused naming the file.
func TestContainerdRegistriesAndImportedImages(t *testing.T) {
	critest.Need(t)
	testtool.Need(t, "ctr")
	if !critest.InNetns(t) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := critest.TempDir(t)
	reg := critest.StartRegistry(t)
	pause := reg.Push(t, "pause:test", critest.PauseImage(t))
	reg.Push(t, "web:1", critest.BusyboxImage(t, critest.ImageConfig{Cmd: []string{"true"}}))
	regs, err := cri.ParseRegistries([]byte("mirrors:\n  mirror.invalid:\n    endpoint: [\"http://" + reg.Host + "\"]\n  \"" + reg.Host + "\":\n    endpoint: [\"http://" + reg.Host + "\"]\n"))
	if err != nil {
		t.Fatal(err)
	}

	images := filepath.Join(dir, "images")
	if err := os.MkdirAll(images, 0o755); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("offline.invalid/tool:1")
	f, err := os.Create(filepath.Join(images, "tool.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.Write(tag, critest.BusyboxImage(t, critest.ImageConfig{Entrypoint: []string{"sh", "-c", "exit 5"}}), f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	bad := filepath.Join(dir, "notes.tar")
	if err := os.WriteFile(bad, []byte(strings.Repeat("not an archive\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}

	o := cri.ContainerdOptions{Dir: filepath.Join(dir, "containerd"), PauseImage: pause, Registries: regs, ImagesDir: images}
	o.CNIConfDir = filepath.Join(o.Dir, "cni", "net.d")
	if _, err := cri.WriteCNIConfig(o.CNIConfDir, critest.PodCIDR, true); err != nil {
		t.Fatal(err)
	}
	cd, err := cri.StartContainerd(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { critest.KillAll(t, cd.Endpoint()); cd.Stop() })
	r, err := cri.New(ctx, cri.Options{Endpoint: cd.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	pod := &runtime.Pod{UID: "uid-tool", Namespace: "default", Name: "tool", LogDir: filepath.Join(dir, "logs")}
	mirrored := &runtime.Container{ID: runtime.ID{PodUID: pod.UID, Name: "web"}, Image: &runtime.Image{Ref: "mirror.invalid/web:1", PullPolicy: cri.PullAlways}, Pod: pod}
	if pulled, err := r.PullImage(ctx, mirrored); err != nil || !pulled {
		t.Fatalf("pull through the mirror: %v, %v", pulled, err)
	}

	if ok, err := r.HasImage(ctx, "offline.invalid/tool:1"); err != nil || !ok {
		t.Fatalf("the archive's image: present %v, %v", ok, err)
	}
	list, err := r.Images(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list, func(i cri.ImageInfo) bool { return slices.Contains(i.Tags, "offline.invalid/tool:1") }) {
		t.Errorf("images %+v: no offline.invalid/tool:1", list)
	}
	tool := &runtime.Container{ID: runtime.ID{PodUID: pod.UID, Name: "tool"}, Image: &runtime.Image{Ref: "offline.invalid/tool:1", PullPolicy: cri.PullNever}, Pod: pod}
	if _, err := r.PullImage(ctx, tool); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Start(ctx, tool); err != nil {
		t.Fatal(err)
	}
	testtool.WaitFor(t, 30*time.Second, "the imported image's run to exit 5", func() error {
		st, err := r.Status(ctx, tool.ID)
		if err != nil {
			return err
		}
		if st.State != runtime.StateExited || st.ExitCode != 5 {
			return errors.New(string(st.State))
		}
		return nil
	})

	err = cri.ImportImages(ctx, cd.Socket(), bad)
	if err == nil || !strings.Contains(err.Error(), bad+": not a tar archive") {
		t.Errorf("import of a text file: %v", err)
	}
}
