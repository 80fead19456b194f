package reconcile

import (
	"testing"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(epoch)
	e := NewExpectations(clk)
	if !e.Satisfied("ns/a") {
		t.Fatal("nothing expected yet, but not satisfied")
	}
	e.ExpectCreations("ns/a", 2)
	if e.Satisfied("ns/a") {
		t.Fatal("satisfied with two creations outstanding")
	}
	e.CreationObserved("ns/a")
	if e.Satisfied("ns/a") {
		t.Fatal("satisfied with one creation outstanding")
	}
	e.CreationObserved("ns/a")
	if !e.Satisfied("ns/a") {
		t.Fatal("not satisfied once both creations were observed")
	}
	e.CreationObserved("ns/a") // a relist: never below zero
	e.ExpectDeletions("ns/a", []string{"ns/p1", "ns/p2"})
	e.DeletionObserved("ns/a", "ns/p1")
	e.DeletionObserved("ns/a", "ns/p1") // marked, then gone: counts once
	if e.Satisfied("ns/a") {
		t.Fatal("satisfied with p2's deletion outstanding")
	}
	clk.SetTime(epoch.Add(ExpectationsTimeout + 1))
	if !e.Satisfied("ns/a") {
		t.Fatal("expectations did not expire")
	}
	e.Forget("ns/a")
	if !e.Satisfied("ns/a") {
		t.Fatal("not satisfied after Forget")
	}
}
