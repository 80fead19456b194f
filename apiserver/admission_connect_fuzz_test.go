package apiserver

import (
	"net/url"
	"testing"
)

// FuzzConnectOptions: whatever a connect's query holds, its options are
// read or refused with a 400, never a panic, and always carry their kind.
func FuzzConnectOptions(f *testing.F) {
	f.Add("exec", "container=app&command=sh&command=-c&stdin=true&tty=1")
	f.Add("attach", "stdout=maybe")
	f.Add("portforward", "ports=8080&ports=x")
	f.Fuzz(func(t *testing.T, sub, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		opts, err := connectOptions(sub, q)
		if err == nil && opts.GetObjectKind().GroupVersionKind().Kind == "" {
			t.Fatalf("%s?%s: options without a kind", sub, query)
		}
	})
}
