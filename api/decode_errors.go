package api

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem with a manifest, located as precisely as the decoder
// could: users fix manifests from these, so each names the file, the
// document, the line and the field.
//
// It renders as
//
//	file:doc N (line L): field.path: message
//
// where " (line L)" is left out when the line is unknown, "field.path: " when
// the problem is about the whole document, "doc N" when it is about the whole
// file (Doc < 0), and "file:doc N (line L): " when the input had no name (an
// API request body).
//
// +kubebuilder:object:generate=false
type Error struct {
	// File is the name the input was decoded under: a path, "<stdin>", a URL.
	File string
	// Doc is the 0-based index of the document in the file, counting only
	// documents that hold something; -1 when the problem is the file's.
	Doc int
	// Line is the 1-based line in the file, 0 when unknown.
	Line int
	// Field is the path of the field, as "spec.template.spec.containers[0].image";
	// empty when the problem is the document's.
	Field string
	// Message says what is wrong, as "Required value" or "unknown field \"imagee\"".
	Message string
	// Kind, Namespace and Name identify the object when they could be read.
	Kind      string
	Namespace string
	Name      string
}

// Error renders the error on one line in the format documented on Error.
func (e *Error) Error() string {
	var b strings.Builder
	if loc := e.Location(); loc != "" {
		b.WriteString(loc)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Location renders where the error is, as "file:doc N (line L)", so that
// other messages (a duplicate object's) can point at the same place.
func (e *Error) Location() string {
	return location(e.File, e.Doc, e.Line)
}

// Object names the object the error is about as kind/namespace/name, or
// kind/name for cluster-scoped objects; empty when unknown.
func (e *Error) Object() string {
	if e.Kind == "" && e.Name == "" {
		return ""
	}
	if e.Namespace == "" {
		return e.Kind + "/" + e.Name
	}
	return e.Kind + "/" + e.Namespace + "/" + e.Name
}

func location(file string, doc, line int) string {
	if file == "" {
		return ""
	}
	if doc < 0 {
		return file
	}
	if line > 0 {
		return fmt.Sprintf("%s:doc %d (line %d)", file, doc, line)
	}
	return fmt.Sprintf("%s:doc %d", file, doc)
}

// ErrorList is every problem found in a stream or a set of streams. The
// decoder collects them all rather than stopping at the first, so that one
// run of `berth validate` or one failed sync shows a user everything to fix.
//
// +kubebuilder:object:generate=false
type ErrorList []*Error

// Error renders every error, one per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Err returns the list as an error, or nil when it is empty; it spares
// callers the trap of a non-nil error interface holding an empty list.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Unwrap exposes the errors to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// Sort orders the list by file, document, line, field and message, the
// order in which a user reads a directory of manifests.
func (l ErrorList) Sort() {
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Doc, b.Doc),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Field, b.Field),
			cmp.Compare(a.Message, b.Message),
		)
	})
}

// AsErrorList returns the decoder errors held by err, if any, so that a
// caller that got an error through a wrapped chain can still show each one.
func AsErrorList(err error) (ErrorList, bool) {
	var l ErrorList
	if errors.As(err, &l) {
		return l, true
	}
	var e *Error
	if errors.As(err, &e) {
		return ErrorList{e}, true
	}
	return nil, false
}

// oneLine folds a message onto one line: errors are printed one per line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n\t") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}
