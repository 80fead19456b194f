package api

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
)

// FuzzDecode feeds the decoder arbitrary streams: whatever a source or an
// API client sends, it must never panic, must say where every error is,
// and what it accepts must default (idempotently) and validate without
// panicking. The seed corpus (testdata/fuzz/FuzzDecode) holds the good and
// bad manifests of api/testdata and cmd/berth/testdata and the inputs that
// once broke it (eof-after-open-brace, lone-carriage-return).
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		"",
		"---\n---\n",
		"\xef\xbb\xbf{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"kind\":\"ConfigMap\"}]}",
		"{\"a\":1}\n{\"b\":",
		"a: &a [*a]\n",
		"--- |\n  text\n...\n",
	} {
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, dropStatus bool) {
		objs, errs := DecodeStream("fuzz.yaml", data, DecodeOptions{DropStatus: dropStatus})
		lines := bytes.Count(normalizeNewlines(data), []byte("\n")) + 1
		for _, e := range errs {
			msg := e.Error()
			if strings.Contains(msg, "internal error") {
				t.Fatalf("decoder panicked: %s", msg)
			}
			if strings.ContainsAny(msg, "\n\r") {
				t.Errorf("error on several lines: %q", msg)
			}
			if e.File != "fuzz.yaml" || e.Doc < 0 || e.Line < 0 || e.Line > lines {
				t.Errorf("error misplaced (%d lines): %+v", lines, e)
			}
		}
		for _, d := range objs {
			if d.Object == nil || d.Doc < 0 || d.Line < 0 || d.Line > lines {
				t.Fatalf("object misplaced (%d lines): %+v", lines, d)
			}
			for _, e := range d.DefaultAndValidate() {
				if e.Line < 0 || e.Line > lines {
					t.Errorf("validation error misplaced (%d lines): %+v", lines, e)
				}
			}
			once := d.Object.DeepCopyObject()
			Default(d.Object)
			if !equality.Semantic.DeepEqual(once, d.Object) {
				t.Errorf("Default is not idempotent on %s", d.Location())
			}
		}
		_ = Duplicates(objs)
	})
}
