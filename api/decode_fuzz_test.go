package api

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/api/equality"
)

// FuzzDecode feeds the decoder arbitrary streams: whatever a source or an
// API client sends, it must never panic, must say where every error is,
// and what it accepts must default (idempotently) and validate without
// panicking. The seed corpus (testdata/fuzz/FuzzDecode) holds the good and
// bad manifests of api/testdata and cmd/berth/testdata, the inputs that
// once broke it (eof-after-open-brace, lone-carriage-return), and
// documents with values of the wrong type beside invalid fields, for
// ValidateRest (wrong-type-and-invalid-*).
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

		// With fieldValidation Warn, unknown and duplicate fields pass as
		// warnings: whatever Strict accepts, Warn accepts too, without a
		// warning, and the rest of its errors are Strict's.
		loose, looseErrs := DecodeStream("fuzz.yaml", data, DecodeOptions{DropStatus: dropStatus, FieldValidation: metav1.FieldValidationWarn})
		if len(loose) < len(objs) || len(looseErrs) > len(errs) {
			t.Fatalf("Warn: %d objects and %d errors, Strict: %d and %d", len(loose), len(looseErrs), len(objs), len(errs))
		}
		for _, e := range looseErrs {
			if strings.Contains(e.Message, "internal error") {
				t.Fatalf("decoder panicked with Warn: %s", e.Message)
			}
		}
		for _, d := range loose {
			for _, w := range d.Warnings {
				if !strings.HasPrefix(w, "unknown field ") && !strings.HasPrefix(w, "duplicate field ") || strings.ContainsAny(w, "\n\r") {
					t.Errorf("warning %q", w)
				}
			}
		}
		if len(loose) == len(objs) && len(looseErrs) == len(errs) {
			for _, d := range loose {
				if len(d.Warnings) > 0 {
					t.Errorf("warnings %q where Strict found nothing", d.Warnings)
				}
			}
		}

		// ValidateRest adds the validation errors of documents with values
		// of the wrong type: the same objects, every error of Strict, each
		// one placed.
		rest, restErrs := DecodeStream("fuzz.yaml", data, DecodeOptions{DropStatus: dropStatus, ValidateRest: true})
		if len(rest) != len(objs) || len(restErrs) < len(errs) {
			t.Fatalf("ValidateRest: %d objects and %d errors, Strict: %d and %d", len(rest), len(restErrs), len(objs), len(errs))
		}
		for _, e := range restErrs {
			if strings.Contains(e.Message, "internal error") {
				t.Fatalf("decoder panicked with ValidateRest: %s", e.Message)
			}
			if strings.ContainsAny(e.Error(), "\n\r") || e.File != "fuzz.yaml" || e.Doc < 0 || e.Line < 0 || e.Line > lines {
				t.Errorf("ValidateRest error misplaced (%d lines): %+v", lines, e)
			}
		}
	})
}
