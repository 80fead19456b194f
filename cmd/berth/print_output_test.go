package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
		{"json-single", []kindObjects{deploy}, printOptions{output: outputFormat{name: outputJSON}, single: true}},
		{"json-list", []kindObjects{pods, src}, printOptions{output: outputFormat{name: outputJSON}}},
		{"json-empty-list", []kindObjects{{kind: kindOf(t, "pods")}}, printOptions{output: outputFormat{name: outputJSON}}},
		{"yaml-single", []kindObjects{deploy}, printOptions{output: outputFormat{name: outputYAML}, single: true}},
		{"yaml-list", []kindObjects{src, deploy}, printOptions{output: outputFormat{name: outputYAML}}},
		{"name", []kindObjects{deploy, pods, src, {kind: kindOf(t, "sc"), objs: kinds["storageclasses"]}}, printOptions{output: outputFormat{name: outputName}}},
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
	if err := printObjects(&buf, groups, printOptions{output: outputFormat{name: outputJSON}}, fixtureNow); err != nil {
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
	p := newStreamPrinter(&buf, kindOf(t, "sources"), outputFormat{name: outputYAML}, tableOptions{})
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
		output, err := parseOutput("jsonpath=" + c.tmpl)
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
	// A template Kubernetes' JSONPath panics on is an error here.
	var buf bytes.Buffer
	if err := printObjects(&buf, []kindObjects{pods}, printOptions{output: mustOutput(t, "jsonpath={range .}{[]0}")}, fixtureNow); err == nil || !strings.Contains(err.Error(), "the template failed") {
		t.Errorf("a template that panics: %v", err)
	}
	// A watch prints each object through the template.
	buf.Reset()
	sp := newStreamPrinter(&buf, kindOf(t, "pods"), mustOutput(t, `jsonpath={.metadata.name}{"\n"}`), tableOptions{})
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
	sp := newStreamPrinter(&buf, kindOf(t, "pods"), mustOutput(t, "custom-columns=NAME:.metadata.name"), tableOptions{})
	for _, p := range []api.Object{p0, p1} {
		if err := sp.print([]api.Object{p}, fixtureNow); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Fields(buf.String()); strings.Join(got, " ") != "NAME "+p0.Name+" "+p1.Name {
		t.Errorf("watch printed %q", buf.String())
	}
}

// mustOutput parses an -o value a test knows to be good.
func mustOutput(t *testing.T, s string) outputFormat {
	t.Helper()
	f, err := parseOutput(s)
	if err != nil {
		t.Fatalf("-o %s: %v", s, err)
	}
	return f
}

// TestGoTemplateOutput: -o go-template (and its alias template) applies
// a Go template to the object's JSON as kubectl does: whole numbers are
// int64 (and compare with 0, not 0.0), a missing key prints <no value>, and kubectl's exists and
// base64decode are there.
func TestGoTemplateOutput(t *testing.T) {
	kinds := fixtureKinds()
	deploy := kindObjects{kind: kindOf(t, "deployments"), objs: kinds["deployments"][:1]}
	pods := kindObjects{kind: kindOf(t, "pods"), objs: kinds["pods"][:2]}
	secret := kindObjects{kind: kindOf(t, "secrets"), objs: kinds["secrets"][:1]}
	d := kinds["deployments"][0].(*api.Deployment)
	p0, p1 := kinds["pods"][0].(*api.Pod), kinds["pods"][1].(*api.Pod)
	for _, c := range []struct {
		output string
		groups []kindObjects
		single bool
		want   string
	}{
		{"go-template={{.metadata.name}} {{.spec.replicas}}", []kindObjects{deploy}, true, fmt.Sprintf("%s %d", d.Name, *d.Spec.Replicas)},
		{"template={{.kind}}", []kindObjects{deploy}, true, "Deployment"},
		{`go-template={{range .items}}{{.metadata.name}}{{"\n"}}{{end}}`, []kindObjects{pods}, false, p0.Name + "\n" + p1.Name + "\n"},
		{"go-template={{if gt .spec.replicas 0}}up{{else}}down{{end}} {{.spec.replicas}}", []kindObjects{deploy}, true, fmt.Sprintf("up %d", *d.Spec.Replicas)},
		{"go-template={{.metadata.nothing}}", []kindObjects{deploy}, true, "<no value>"},
		{`go-template={{exists . "metadata" "name"}} {{exists . "metadata" "nothing"}} {{exists .spec.template.spec.containers 0}} {{exists .spec.template.spec.containers 9}}`, []kindObjects{deploy}, true, "true false true false"},
		{"go-template={{.data.password | base64decode}}", []kindObjects{secret}, true, "s3cret"},
	} {
		var buf bytes.Buffer
		if err := printObjects(&buf, c.groups, printOptions{output: mustOutput(t, c.output), single: c.single}, fixtureNow); err != nil {
			t.Fatalf("%s: %v", c.output, err)
		}
		if buf.String() != c.want {
			t.Errorf("-o %s printed %q, want %q", c.output, buf.String(), c.want)
		}
	}
	for _, bad := range []string{"go-template=", "template=", "go-template={{.x", "go-template={{nosuchfunc .}}", "gotemplate={{.x}}"} {
		if _, err := parseOutput(bad); err == nil {
			t.Errorf("-o %s accepted", bad)
		}
	}
	// An error while executing names the template; a whole number is no
	// float, as in kubectl.
	var buf bytes.Buffer
	for tmpl, want := range map[string]string{
		"{{.metadata.name | base64decode}}": "base64 decode failed",
		"{{gt .spec.replicas 0.0}}":         "incompatible types for comparison",
	} {
		err := printObjects(&buf, []kindObjects{deploy}, printOptions{output: mustOutput(t, "go-template="+tmpl), single: true}, fixtureNow)
		if err == nil || !strings.Contains(err.Error(), "error executing template") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", tmpl, err, want)
		}
	}
	// A watch prints each object through the template.
	buf.Reset()
	sp := newStreamPrinter(&buf, kindOf(t, "pods"), mustOutput(t, `go-template={{.metadata.name}}{{"\n"}}`), tableOptions{})
	if err := sp.print([]api.Object{p0, p1}, fixtureNow); err != nil || buf.String() != p0.Name+"\n"+p1.Name+"\n" {
		t.Errorf("watch printed %q, %v", buf.String(), err)
	}
}

// TestTemplateFiles: the -file forms read the template from a file and
// print what the inline forms print; a missing file or a bad one is a
// usage error.
func TestTemplateFiles(t *testing.T) {
	kinds := fixtureKinds()
	pods := kindObjects{kind: kindOf(t, "pods"), objs: kinds["pods"][:2]}
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	print := func(output string) string {
		var buf bytes.Buffer
		if err := printObjects(&buf, []kindObjects{pods}, printOptions{output: mustOutput(t, output)}, fixtureNow); err != nil {
			t.Fatalf("-o %s: %v", output, err)
		}
		return buf.String()
	}
	for _, c := range []struct{ file, inline string }{
		{"jsonpath-file=" + file("names.jsonpath", `{range .items[*]}{.metadata.name}{"\n"}{end}`), `jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}`},
		{"go-template-file=" + file("names.tmpl", `{{range .items}}{{.metadata.name}} {{.spec.nodeName}}{{"\n"}}{{end}}`), `go-template={{range .items}}{{.metadata.name}} {{.spec.nodeName}}{{"\n"}}{{end}}`},
		{"templatefile=" + file("kinds.tmpl", `{{range .items}}{{.kind}}{{end}}`), `template={{range .items}}{{.kind}}{{end}}`},
		{"custom-columns-file=" + file("cols.txt", "NAME   NODE            PHASE\r\nmetadata.name   {.spec.nodeName}   .status.phase\n"), "custom-columns=NAME:metadata.name,NODE:{.spec.nodeName},PHASE:.status.phase"},
	} {
		got, want := print(c.file), print(c.inline)
		if got != want || got == "" {
			t.Errorf("-o %s printed %q, and -o %s %q", c.file, got, c.inline, want)
		}
	}
	for _, bad := range []string{
		"jsonpath-file=", "go-template-file=" + filepath.Join(dir, "missing"),
		"jsonpath-file=" + file("bad.jsonpath", "{.items["),
		"custom-columns-file=" + file("one-line.txt", "NAME NODE"),
		"custom-columns-file=" + file("uneven.txt", "NAME NODE\n.metadata.name\n"),
		"custom-columns-file=" + file("empty.txt", ""),
	} {
		if _, err := parseOutput(bad); err == nil {
			t.Errorf("-o %s accepted", bad)
		}
	}
}

// An unknown -o names the whole value, as kubectl's error does.
func TestUnknownOutputNamesValue(t *testing.T) {
	for _, s := range []string{"table", "foo=bar"} {
		_, err := parseOutput(s)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("output format %q,", s)) {
			t.Errorf("-o %s: %v", s, err)
		}
	}
}
