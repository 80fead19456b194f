package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/api"
)

func TestOutputGolden(t *testing.T) {
	kinds := fixtureKinds()
	deploy := kindObjects{kind: kindOf(t, "deployments"), objs: kinds["deployments"][:1]}
	pods := kindObjects{kind: kindOf(t, "pods"), objs: kinds["pods"][:2]}
	src := kindObjects{kind: kindOf(t, "sources"), objs: kinds["sources"][2:]}
	tests := []struct {
		name   string
		groups []kindObjects
		opts   printOptions
	}{
		{"json-single", []kindObjects{deploy}, printOptions{output: outputJSON, single: true}},
		{"json-list", []kindObjects{pods, src}, printOptions{output: outputJSON}},
		{"json-empty-list", []kindObjects{{kind: kindOf(t, "pods")}}, printOptions{output: outputJSON}},
		{"yaml-single", []kindObjects{deploy}, printOptions{output: outputYAML, single: true}},
		{"yaml-list", []kindObjects{src, deploy}, printOptions{output: outputYAML}},
		{"name", []kindObjects{deploy, pods, src, {kind: kindOf(t, "sc"), objs: kinds["storageclasses"]}}, printOptions{output: outputName}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := printObjects(&buf, tt.groups, tt.opts, fixtureNow); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "print/"+tt.name, buf.String())
		})
	}
}

// TestListDocument checks the shape SPEC §2 promises for -o json of a
// list, independently of the golden files.
func TestListDocument(t *testing.T) {
	var buf bytes.Buffer
	groups := []kindObjects{{kind: kindOf(t, "pods"), objs: fixturePods()[:1]}}
	if err := printObjects(&buf, groups, printOptions{output: outputJSON}, fixtureNow); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
		Metadata   map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.APIVersion != "v1" || doc.Kind != "List" || len(doc.Items) != 1 || doc.Metadata["resourceVersion"] != "" {
		t.Errorf("list document = %+v", doc)
	}
	var item map[string]any
	if err := yaml.Unmarshal(doc.Items[0], &item); err != nil {
		t.Fatal(err)
	}
	if item["apiVersion"] != "v1" || item["kind"] != "Pod" {
		t.Errorf("item apiVersion/kind = %v/%v", item["apiVersion"], item["kind"])
	}
}

func TestWatchDocuments(t *testing.T) {
	var buf bytes.Buffer
	p := newStreamPrinter(&buf, kindOf(t, "sources"), outputYAML, tableOptions{})
	srcs := fixtureSources()
	for _, s := range srcs[1:] {
		if err := p.print([]api.Object{s}, fixtureNow); err != nil {
			t.Fatal(err)
		}
	}
	checkGolden(t, "print/yaml-watch", buf.String())
}

// TestJSONPathOutput: -o jsonpath=TEMPLATE picks out of the object asked
// for, or out of the List, as kubectl does; a bad template is a usage
// error before anything is fetched.
func TestJSONPathOutput(t *testing.T) {
	kinds := fixtureKinds()
	deploy := kindObjects{kind: kindOf(t, "deployments"), objs: kinds["deployments"][:1]}
	pods := kindObjects{kind: kindOf(t, "pods"), objs: kinds["pods"][:2]}
	d := kinds["deployments"][0].(*api.Deployment)
	p0, p1 := kinds["pods"][0].(*api.Pod), kinds["pods"][1].(*api.Pod)
	for _, c := range []struct {
		tmpl   string
		groups []kindObjects
		single bool
		want   string
	}{
		{"{.metadata.name} {.spec.replicas}", []kindObjects{deploy}, true, fmt.Sprintf("%s %d", d.Name, *d.Spec.Replicas)},
		{"{.kind}", []kindObjects{deploy}, true, "Deployment"},
		{"{.items[*].metadata.name}", []kindObjects{pods}, false, p0.Name + " " + p1.Name},
		{`{range .items[*]}{.metadata.name}{"\t"}{.kind}{"\n"}{end}`, []kindObjects{pods}, false, p0.Name + "\tPod\n" + p1.Name + "\tPod\n"},
		{"{.metadata.nothing}", []kindObjects{deploy}, true, ""},
	} {
		output, err := parseOutput(outputJSONPath + c.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", c.tmpl, err)
		}
		var buf bytes.Buffer
		if err := printObjects(&buf, c.groups, printOptions{output: output, single: c.single}, fixtureNow); err != nil {
			t.Fatalf("%s: %v", c.tmpl, err)
		}
		if buf.String() != c.want {
			t.Errorf("%s printed %q, want %q", c.tmpl, buf.String(), c.want)
		}
	}
	for _, bad := range []string{"jsonpath=", "jsonpath={.items[", "jsonpath2={.x}"} {
		if _, err := parseOutput(bad); err == nil {
			t.Errorf("-o %s accepted", bad)
		}
	}
	// A watch prints each object through the template.
	var buf bytes.Buffer
	sp := newStreamPrinter(&buf, kindOf(t, "pods"), outputJSONPath+`{.metadata.name}{"\n"}`, tableOptions{})
	if err := sp.print([]api.Object{p0, p1}, fixtureNow); err != nil || buf.String() != p0.Name+"\n"+p1.Name+"\n" {
		t.Errorf("watch printed %q, %v", buf.String(), err)
	}
}

// TestCustomColumnsOutput: -o custom-columns=HEADER:PATH,... prints a
// row per object with the paths in kubectl's relaxed forms, <none> for a
// missing value and values of a list joined by commas.
func TestCustomColumnsOutput(t *testing.T) {
	kinds := fixtureKinds()
	pods := kindObjects{kind: kindOf(t, "pods"), objs: kinds["pods"][:2]}
	p0, p1 := kinds["pods"][0].(*api.Pod), kinds["pods"][1].(*api.Pod)
	output, err := parseOutput("custom-columns=NAME:.metadata.name,KIND:kind,CONTAINERS:{.spec.containers[*].name},NOPE:.spec.nope")
	if err != nil {
		t.Fatal(err)
	}
	names := func(p *api.Pod) string {
		var n []string
		for _, c := range p.Spec.Containers {
			n = append(n, c.Name)
		}
		return strings.Join(n, ",")
	}
	var buf bytes.Buffer
	if err := printObjects(&buf, []kindObjects{pods}, printOptions{output: output}, fixtureNow); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := [][]string{{"NAME", "KIND", "CONTAINERS", "NOPE"}, {p0.Name, "Pod", names(p0), "<none>"}, {p1.Name, "Pod", names(p1), "<none>"}}
	if len(lines) != len(want) {
		t.Fatalf("printed %q", buf.String())
	}
	for i, l := range lines {
		if got := strings.Fields(l); strings.Join(got, "|") != strings.Join(want[i], "|") {
			t.Errorf("line %d: %q, want %q", i, l, want[i])
		}
	}
	if !strings.HasPrefix(lines[1], p0.Name+"   ") {
		t.Errorf("columns are not padded as kubectl pads them: %q", lines[1])
	}
	buf.Reset()
	if err := printObjects(&buf, []kindObjects{pods}, printOptions{output: output, table: tableOptions{noHeaders: true}}, fixtureNow); err != nil || strings.Contains(buf.String(), "NAME") {
		t.Errorf("--no-headers printed %q, %v", buf.String(), err)
	}
	for _, bad := range []string{"custom-columns=", "custom-columns=NAME", "custom-columns=:.a", "custom-columns=A:{.x", "custom-columns=A:{a}{b}"} {
		if _, err := parseOutput(bad); err == nil {
			t.Errorf("-o %s accepted", bad)
		}
	}
	// A watch prints the header once, then a row per object.
	buf.Reset()
	sp := newStreamPrinter(&buf, kindOf(t, "pods"), "custom-columns=NAME:.metadata.name", tableOptions{})
	for _, p := range []api.Object{p0, p1} {
		if err := sp.print([]api.Object{p}, fixtureNow); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Fields(buf.String()); strings.Join(got, " ") != "NAME "+p0.Name+" "+p1.Name {
		t.Errorf("watch printed %q", buf.String())
	}
}
