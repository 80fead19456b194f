package cri_test

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/agent/runtime/cri"
	"github.com/berth-dev/berth/agent/runtime/cri/critest"
)

// TestImageGCOnContainerd collects images on a real containerd with the
// thresholds at their lowest, so that the disk is always over them: an
// image is removed only once it is older than the minimum age on the
// clock, and never the one a container uses nor the sandbox image.
func TestImageGCOnContainerd(t *testing.T) {
	critest.Need(t)
	if !critest.InNetns(t) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := critest.Start(t, ctx)
	used := env.Registry.Push(t, "used:1", critest.BusyboxImage(t, critest.ImageConfig{Cmd: []string{"sleep", "1000"}}))
	unused := env.Registry.Push(t, "unused:1", critest.BusyboxImage(t, critest.ImageConfig{Cmd: []string{"true"}}))
	r, err := cri.New(ctx, cri.Options{Endpoint: env.Containerd.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pod := &runtime.Pod{UID: "uid-gc", Namespace: "default", Name: "gc", LogDir: env.Dir + "/logs/uid-gc"}
	for _, ref := range []string{env.PauseImage, used, unused} {
		if _, err := r.PullImage(ctx, &runtime.Container{Image: &runtime.Image{Ref: ref, PullPolicy: cri.PullIfNotPresent}}); err != nil {
			t.Fatal(err)
		}
	}
	c := &runtime.Container{ID: runtime.ID{PodUID: pod.UID, Name: "sleep"}, Image: &runtime.Image{Ref: used, PullPolicy: cri.PullNever}, Pod: pod}
	if _, err := r.Start(ctx, c); err != nil {
		t.Fatal(err)
	}

	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	gc := cri.NewImageGC(r, cri.ImageGCPolicy{HighThresholdPercent: 1, LowThresholdPercent: 0, MinAge: 2 * time.Minute, Keep: []string{env.PauseImage}}, clk)
	if removed, err := gc.Collect(ctx); err != nil || len(removed) != 0 {
		t.Fatalf("images first seen now: removed %q, %v", removed, err)
	}
	clk.Step(2*time.Minute - time.Second)
	if removed, err := gc.Collect(ctx); err != nil || len(removed) != 0 {
		t.Fatalf("images younger than the minimum age: removed %q, %v", removed, err)
	}
	clk.Step(time.Second)
	removed, err := gc.Collect(ctx)
	if err != nil || len(removed) != 1 {
		t.Fatalf("removed %q, %v: want the unused image alone", removed, err)
	}
	present := func(ref string) bool {
		ok, err := r.HasImage(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if present(unused) || !present(used) || !present(env.PauseImage) {
		t.Fatalf("after collection: unused %v, used %v, pause %v", present(unused), present(used), present(env.PauseImage))
	}
	// Once no container uses it, the image goes too.
	if err := r.Stop(ctx, c.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := r.RemovePod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if removed, err := gc.Collect(ctx); err != nil || len(removed) != 1 || present(used) || !present(env.PauseImage) {
		t.Fatalf("after the container's removal: removed %q, %v; used present %v", removed, err, present(used))
	}
}
