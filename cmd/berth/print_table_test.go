package main

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/table"
)

func kindOf(t testing.TB, resource string) *api.Kind {
	t.Helper()
	k, ok := api.LookupResource(resource)
	if !ok {
		t.Fatalf("no kind %q", resource)
	}
	return k
}

// TestTableGolden prints every kind's fixtures as `get` would, plain and
// -o wide.
func TestTableGolden(t *testing.T) {
	kinds := fixtureKinds()
	resources := make([]string, 0, len(kinds))
	for r := range kinds {
		resources = append(resources, r)
	}
	sort.Strings(resources)
	if len(resources) != len(api.Kinds()) {
		t.Errorf("fixtures cover %d kinds, the registry has %d", len(resources), len(api.Kinds()))
	}
	for _, r := range resources {
		for _, wide := range []bool{false, true} {
			name := r
			if wide {
				name += "-wide"
			}
			t.Run(name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := printTable(&buf, kindOf(t, r), kinds[r], tableOptions{wide: wide}, fixtureNow); err != nil {
					t.Fatal(err)
				}
				checkGolden(t, "print/"+name, buf.String())
			})
		}
	}
}

func TestTableOptionsGolden(t *testing.T) {
	tests := []struct {
		name     string
		resource string
		opts     tableOptions
	}{
		{"pods-all-namespaces", "pods", tableOptions{allNamespaces: true}},
		{"pods-all-namespaces-wide", "pods", tableOptions{allNamespaces: true, wide: true}},
		// A cluster-scoped kind gets no NAMESPACE column with -A.
		{"nodes-all-namespaces", "nodes", tableOptions{allNamespaces: true}},
		{"services-show-labels", "services", tableOptions{showLabels: true}},
		{"events-all-namespaces", "events", tableOptions{allNamespaces: true}},
		{"deployments-no-headers", "deployments", tableOptions{noHeaders: true}},
	}
	kinds := fixtureKinds()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := printTable(&buf, kindOf(t, tt.resource), kinds[tt.resource], tt.opts, fixtureNow); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "print/"+tt.name, buf.String())
		})
	}
}

// TestTableMatchesTabwriter holds the table layout to kubectl's: the
// same text as text/tabwriter with kubectl's settings gives for a table
// printed at once.
func TestTableMatchesTabwriter(t *testing.T) {
	for resource, objs := range fixtureKinds() {
		k := kindOf(t, resource)
		for _, opts := range []tableOptions{{}, {wide: true}, {allNamespaces: true, showLabels: true}} {
			var got bytes.Buffer
			p := newTablePrinter(&got, k, opts)
			if err := p.print(objs, fixtureNow); err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			tw := tabwriter.NewWriter(&want, tableMinWidth, 4, tablePadding, ' ', 0)
			fmt.Fprintln(tw, strings.Join(p.header(), "\t"))
			for _, obj := range objs {
				fmt.Fprintln(tw, strings.Join(p.row(obj, fixtureNow), "\t"))
			}
			tw.Flush()
			if got.String() != want.String() {
				t.Errorf("%s %+v:\n--- got\n%s--- tabwriter\n%s", resource, opts, got.String(), want.String())
			}
		}
	}
}

// TestWatchRowsStayAligned prints rows one event at a time, as -w does:
// widths grow to fit a longer cell and never shrink, and the header is
// printed once.
func TestWatchRowsStayAligned(t *testing.T) {
	var buf bytes.Buffer
	pods := fixturePods()
	p := newStreamPrinter(&buf, kindOf(t, "pods"), outputFormat{name: outputTable}, tableOptions{})
	steps := [][]api.Object{nil, {pods[5]}, {pods[0]}, {pods[1]}, {pods[3]}}
	for i, objs := range steps {
		if err := p.print(objs, fixtureNow.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	checkGolden(t, "print/pods-watch", buf.String())
}

func TestMultipleKinds(t *testing.T) {
	kinds := fixtureKinds()
	groups := []kindObjects{
		{kind: kindOf(t, "pods"), objs: kinds["pods"][:2]},
		{kind: kindOf(t, "services"), objs: nil},
		{kind: kindOf(t, "deployments"), objs: kinds["deployments"]},
		{kind: kindOf(t, "nodes"), objs: kinds["nodes"][:1]},
	}
	var buf bytes.Buffer
	if err := printObjects(&buf, groups, printOptions{table: tableOptions{allNamespaces: true}}, fixtureNow); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "print/multiple-kinds", buf.String())
}

func TestCellText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"first line\nsecond", "first line..."},
		{"a\tb", "a b"},
		{"cr\rx", "cr..."},
		{"", ""},
	}
	for _, tt := range tests {
		if got := cellText(tt.in); got != tt.want {
			t.Errorf("cellText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if table.None != "<none>" {
		t.Errorf("table.None = %q", table.None)
	}
}
