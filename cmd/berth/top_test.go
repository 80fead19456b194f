package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/api"
)

// TestTopTables: berth top prints what kubectl top prints: millicores,
// mebibytes (millicores rounded up, as Kubernetes rounds them), a node's share of its allocatable, a pod's containers summed
// or, with --containers, one a row.
func TestTopTables(t *testing.T) {
	var items []usageItem
	if err := json.Unmarshal([]byte(`[
		{"metadata":{"name":"n2"},"usage":{"cpu":"1500000000n","memory":"2Gi"}},
		{"metadata":{"name":"n1"},"usage":{"cpu":"250m","memory":"512Mi"}}]`), &items); err != nil {
		t.Fatal(err)
	}
	alloc := map[string]api.ResourceList{"n1": {api.ResourceCPU: resource.MustParse("2"), api.ResourceMemory: resource.MustParse("4Gi")}}
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, tableMinWidth, 4, tablePadding, ' ', 0)
	printNodeUsage(tw, items, alloc, false)
	tw.Flush()
	want := [][]string{{"NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"}, {"n1", "250m", "12%", "512Mi", "12%"}, {"n2", "1500m", "<unknown>", "2048Mi", "<unknown>"}}
	checkRows(t, b.String(), want)

	if err := json.Unmarshal([]byte(`[
		{"metadata":{"name":"web","namespace":"shop"},"containers":[{"name":"app","usage":{"cpu":"10m","memory":"100Mi"}},{"name":"log","usage":{"cpu":"2500000n","memory":"20Mi"}}]},
		{"metadata":{"name":"db","namespace":"default"},"containers":[{"name":"pg","usage":{"cpu":"1","memory":"1Gi"}}]}]`), &items); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	tw = tabwriter.NewWriter(&b, tableMinWidth, 4, tablePadding, ' ', 0)
	printPodUsage(tw, items, true, false, false)
	tw.Flush()
	checkRows(t, b.String(), [][]string{{"NAMESPACE", "NAME", "CPU(cores)", "MEMORY(bytes)"}, {"default", "db", "1000m", "1024Mi"}, {"shop", "web", "13m", "120Mi"}})
	b.Reset()
	tw = tabwriter.NewWriter(&b, tableMinWidth, 4, tablePadding, ' ', 0)
	printPodUsage(tw, items, false, true, true)
	tw.Flush()
	checkRows(t, b.String(), [][]string{{"db", "pg", "1000m", "1024Mi"}, {"web", "app", "10m", "100Mi"}, {"web", "log", "3m", "20Mi"}})
}

func checkRows(t *testing.T, out string, want [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want) {
		t.Fatalf("printed %q", out)
	}
	for i, l := range lines {
		if got := strings.Fields(l); strings.Join(got, "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d: %q, want %q", i, l, want[i])
		}
	}
}

// As kubectl top: a namespace without pods has nothing to measure (exit
// 0), pods not measured yet are an error.
func TestTopWithoutMetrics(t *testing.T) {
	useFakeAPI(t, cluster())
	if r := runBerth(t, "", "top", "pod", "-n", "empty"); r.code != exitOK || !strings.Contains(r.stderr, "No resources found in empty namespace.") {
		t.Errorf("top pod in an empty namespace: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runBerth(t, "", "top", "pod"); r.code != exitFailure || !strings.Contains(r.stderr, "metrics not available yet") {
		t.Errorf("top pod of pods not measured: exit %d, stderr %q", r.code, r.stderr)
	}
}

// top takes the kinds' names as get does, and a pod's name with -A not.
func TestTopArguments(t *testing.T) {
	useFakeAPI(t, cluster())
	for _, args := range [][]string{{"top", "no"}, {"top", "nodes"}, {"top", "po"}, {"top", "pod", "-A"}} {
		if r := runBerth(t, "", args...); r.code == exitUsage {
			t.Errorf("%v: usage error %s", args, r.stderr)
		}
	}
	for _, args := range [][]string{{"top", "svc"}, {"top", "nope"}, {"top", "pod", "web", "-A"}} {
		if r := runBerth(t, "", args...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want a usage error", args, r.code)
		}
	}
}
