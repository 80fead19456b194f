package main

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// FuzzOutputFormat reads arbitrary -o values and prints the fixtures
// through what it accepts: parsing never panics and refuses with a usage
// error that names the format; printing never panics, and a template
// that fails while printing says so.
func FuzzOutputFormat(f *testing.F) {
	for _, seed := range []string{
		"", "json", "yaml", "wide", "name", "table",
		"jsonpath={.items[*].metadata.name}", `jsonpath={range .items[*]}{.kind}{"\n"}{end}`, "jsonpath={.items[",
		"jsonpath={.items[?(@.spec.nodeName=='node-1')].metadata.name}", "jsonpath={.items[-1:]}", "jsonpath={..name}",
		"go-template={{.kind}}", `go-template={{range .items}}{{.metadata.name}}{{end}}`, "go-template={{.x",
		`go-template={{exists . "items" 0 "spec"}}`, "go-template={{index .items 99}}", "template={{len .items}}",
		"go-template={{template \"output\" .}}", "go-template={{.kind | base64decode}}",
		"custom-columns=NAME:.metadata.name,NODE:{.spec.nodeName}", "custom-columns=:", "custom-columns=A:{a}{b}",
		"jsonpath-file=", "custom-columns-file=",
	} {
		f.Add(seed)
	}
	kinds := fixtureKinds()
	pods := kindObjects{kind: kindOf(f, "pods"), objs: kinds["pods"]}
	f.Fuzz(func(t *testing.T, output string) {
		if strings.Contains(output, "-file=") {
			// Files are read; what is in them is parsed as the inline
			// forms are, fuzzed here.
			return
		}
		format, err := parseOutput(output)
		if err != nil {
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitUsage {
				t.Fatalf("-o %q: %v is not a usage error", output, err)
			}
			return
		}
		if strings.Contains(output, "{{template") {
			// A template that calls itself recurses until text/template's
			// depth limit: correct, but slow for a fuzzer.
			return
		}
		// A template may print without end ({{range 1000000000}}): the
		// writer refuses past 1 MiB, which ends it with an error.
		w := &boundedWriter{left: 1 << 20}
		err = printObjects(w, []kindObjects{pods}, printOptions{output: format}, fixtureNow)
		switch {
		case err == nil, errors.Is(err, errWriterFull):
		case format.tmpl == nil && format.cols == nil:
			t.Fatalf("-o %q: %v", output, err)
		case !templateFailure.MatchString(err.Error()):
			t.Fatalf("-o %q: the printing error %q does not say the template or column failed", output, err)
		}
	})
}

// templateFailure is how the errors of a template or column that fails
// while printing begin.
var templateFailure = regexp.MustCompile(`^(jsonpath: |the template failed: |error executing template |column )`)

// boundedWriter takes left bytes, then fails.
type boundedWriter struct{ left int }

var errWriterFull = errors.New("writer full")

func (w *boundedWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		w.left = 0
		return 0, errWriterFull
	}
	w.left -= len(p)
	return len(p), nil
}
