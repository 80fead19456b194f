package sched

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/storetest"
)

func never(p *api.Pod) { v := api.PreemptNever; p.Spec.PreemptionPolicy = &v }

func startedAt(sec int64) func(*api.Pod) {
	return func(p *api.Pod) { p.CreationTimestamp = metav1.NewTime(time.Unix(sec, 0)) }
}

// preemptOn schedules pod over nodes and, when no node fits, preempts as
// the scheduler does; it returns the message and the preemption.
func preemptOn(t *testing.T, nodes *Nodes, pod *api.Pod, budgets ...*api.PodDisruptionBudget) (string, Preemption) {
	t.Helper()
	fw := NewFramework(FrameworkOptions{Seed: 1})
	info := NewPodInfo(pod)
	_, err := fw.Schedule(info, nodes)
	var fe *FitError
	if !errors.As(err, &fe) {
		t.Fatalf("scheduled: %v", err)
	}
	p := fw.Preempt(info, nodes, fe, budgets)
	fe.PostFilterMsg = p.Message
	return fe.Error(), p
}

func victims(p Preemption) string {
	var out []string
	for _, v := range p.Victims {
		out = append(out, v.Name)
	}
	return fmt.Sprintf("%s %v", p.Node, out)
}

// The expectations follow kube-scheduler's DefaultPreemption
// (plugins/defaultpreemption and framework/preemption).
func TestPreempt(t *testing.T) {
	small := func(name string) *api.Node { return makeNode(name, allocatable("2", "4Gi", 110)) }
	pod := func(name string, prio int32, cpu string, opts ...func(*api.Pod)) *api.Pod {
		return makePod(name, append([]func(*api.Pod){priority(prio), requests(cpu, "")}, opts...)...)
	}
	budget := &api.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
		Spec:   api.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, MinAvailable: &intstr.IntOrString{IntVal: 1}},
		Status: api.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}}
	tests := []struct {
		name     string
		nodes    *Nodes
		pod      *api.Pod
		budgets  []*api.PodDisruptionBudget
		want     string
		wantMsg  string
		wantNone bool
	}{
		{name: "one lower pod in the way", nodes: cluster(on(small("n1"), pod("low", 0, "2"))),
			pod: pod("high", 100, "1"), want: "n1 [low]"},
		{name: "equal priority: no victims", nodes: cluster(on(small("n1"), pod("peer", 100, "2"))),
			pod: pod("high", 100, "1"), wantMsg: "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."},
		{name: "preemptionPolicy Never", nodes: cluster(on(small("n1"), pod("low", 0, "2"))),
			pod: pod("high", 100, "1", never), wantMsg: "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."},
		{name: "a taint is not cured by preemption", nodes: cluster(
			on(makeNode("n1", allocatable("2", "4Gi", 110), taints(taint("dedicated", "x", api.TaintEffectNoSchedule))), pod("low", 0, "2")),
			on(small("n2"), pod("low2", 0, "2"))),
			pod: pod("high", 100, "1"), want: "n2 [low2]"},
		{name: "the node whose victims have the lowest priority", nodes: cluster(
			on(small("n1"), pod("mid", 50, "2")), on(small("n2"), pod("low", 10, "2"))),
			pod: pod("high", 100, "1"), want: "n2 [low]"},
		{name: "as few victims as room needs, the least important go", nodes: cluster(
			on(small("n1"), pod("older", 10, "1", startedAt(100)), pod("newer", 10, "1", startedAt(200)))),
			pod: pod("high", 100, "1"), want: "n1 [newer]"},
		{name: "the lower priority goes first", nodes: cluster(
			on(small("n1"), pod("ten", 10, "1"), pod("five", 5, "1"))),
			pod: pod("high", 100, "1"), want: "n1 [five]"},
		{name: "a budget steers preemption to another node", nodes: cluster(
			on(small("n1"), pod("db", 10, "2", podLabels("app", "db"))),
			on(small("n2"), pod("web", 10, "2", podLabels("app", "web")))),
			pod: pod("high", 100, "1"), budgets: []*api.PodDisruptionBudget{budget}, want: "n2 [web]"},
		{name: "a budget is broken when nothing else helps", nodes: cluster(
			on(small("n1"), pod("db", 10, "2", podLabels("app", "db")))),
			pod: pod("high", 100, "1"), budgets: []*api.PodDisruptionBudget{budget}, want: "n1 [db]"},
		{name: "too big even on an empty node", nodes: cluster(on(small("n1"), pod("low", 0, "1"))),
			pod: pod("huge", 100, "3"), wantMsg: "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu."},
		{name: "a node selector no node matches", nodes: cluster(on(small("n1"), pod("low", 0, "2"))),
			pod:     pod("high", 100, "1", selector("disk", "ssd")),
			wantMsg: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fmt.Sprint(tt.nodes.priorities)
			msg, p := preemptOn(t, tt.nodes, tt.pod, tt.budgets...)
			if tt.want != "" && victims(p) != tt.want {
				t.Errorf("preempted %s, want %s (%s)", victims(p), tt.want, msg)
			}
			if tt.wantMsg != "" && (msg != tt.wantMsg || p.Node != "") {
				t.Errorf("message %q, node %q, want %q", msg, p.Node, tt.wantMsg)
			}
			if after := fmt.Sprint(tt.nodes.priorities); after != before {
				t.Errorf("the nodes changed: %s, was %s", after, before)
			}
		})
	}
}

// Over a store: a high-priority pod finds its node full of a
// low-priority one, which gets a DisruptionTarget condition and is
// deleted; the high one is nominated to the node, and bound there once
// the low one is gone.
func TestPreemptionOverStore(t *testing.T) {
	s := storetest.NewMemory(t)
	create(t, s, makeNode("n1", allocatable("2", "4Gi", 110)))
	rec := &recorder{}
	start(t, s, Options{Events: rec})
	create(t, s, makePod("low", priority(0), requests("2", "")))
	waitPod(t, s, "low", boundTo("n1"))

	create(t, s, makePod("high", priority(1000), requests("1", "")))
	low := waitPod(t, s, "low", func(p *api.Pod) bool { return p.DeletionTimestamp != nil })
	var cond *api.PodCondition
	for i := range low.Status.Conditions {
		if low.Status.Conditions[i].Type == api.PodDisruptionTarget {
			cond = &low.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Status != api.ConditionTrue || cond.Reason != "PreemptionByScheduler" ||
		cond.Message != "default-scheduler: preempting to accommodate a higher priority pod" {
		t.Fatalf("DisruptionTarget %+v", cond)
	}
	high := waitPod(t, s, "high", func(p *api.Pod) bool { return p.Status.NominatedNodeName == "n1" })
	if c := scheduledCondition(high); c == nil || c.Message != "0/1 nodes are available: 1 Insufficient cpu." {
		t.Fatalf("condition %+v", c)
	}
	highUID := high.UID
	waitFor(t, func() bool { return rec.has(EventPreempted, "Preempted by pod "+string(highUID)+" on node n1") })

	// The node's agent would end the pod; its grace period over, it goes.
	zero := int64(0)
	if _, err := s.Delete(context.Background(), podKind, "default", "low", store.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	high = waitPod(t, s, "high", boundTo("n1"))
	if high.Status.NominatedNodeName != "" {
		t.Errorf("nominatedNodeName %q after binding", high.Status.NominatedNodeName)
	}
}
