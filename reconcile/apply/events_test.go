package apply

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/source"
	"github.com/berth-dev/berth/store"
)

// sourceEvents lists the events recorded on the Source fleet, in the
// order they were first recorded, as "Type Reason (count): message".
func (f *fixture) sourceEvents() []string {
	f.t.Helper()
	objs, _, err := f.store.List(eventKind, store.Filter{Namespace: api.NamespaceDefault})
	if err != nil {
		f.t.Fatal(err)
	}
	var evs []*api.Event
	for _, o := range objs {
		if e := o.(*api.Event); e.InvolvedObject.Kind == "Source" && e.InvolvedObject.Name == fleet {
			evs = append(evs, e)
		}
	}
	slices.SortFunc(evs, func(a, b *api.Event) int { return a.FirstTimestamp.Compare(b.FirstTimestamp.Time) })
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = fmt.Sprintf("%s %s (%d): %s", e.Type, e.Reason, e.Count, e.Message)
	}
	return out
}

// TestSourceEvents checks that each new outcome of a sync is an event on
// the Source, as Flux's controllers record them, and that a sync ending
// as the one before records nothing, however often the source is polled.
func TestSourceEvents(t *testing.T) {
	f := newFixture(t)
	unknown := func(name string) string { return configMap(name, "1") + "datum: {}\n" }
	good := decode(t, "r1", "a.yaml", configMap("a", "1"))
	bad := decode(t, "r2", "a.yaml", configMap("a", "2"), "bad.yaml", docs(unknown("b"), unknown("c"), unknown("d"), unknown("e")))
	fetchFailed := source.Revision{Err: errors.New("dial tcp: connection refused")}

	const (
		applied  = "Normal ReconciliationSucceeded (1): Applied revision r1: 1 created, 0 updated, 0 pruned, 0 unchanged"
		rejected = "Warning ValidationFailed (%d): Revision r2 rejected, nothing applied (still at revision r1): 4 errors: " +
			`bad.yaml:doc 0 (line 7): datum: unknown field "datum"; bad.yaml:doc 1 (line 15): datum: unknown field "datum"; ` +
			`bad.yaml:doc 2 (line 23): datum: unknown field "datum"; and 1 more (the Ready condition lists them)`
		failed    = "Warning FetchFailed (1): cannot read the source: dial tcp: connection refused; still at revision r1"
		recovered = "Normal ReconciliationSucceeded (1): Applied revision r1: 0 created, 0 updated, 0 pruned, 1 unchanged"
	)
	steps := []struct {
		name string
		rev  source.Revision
		want []string // every event of the Source after the step
	}{
		{"first revision", good, []string{applied}},
		{"the same again (a trigger)", good, []string{applied}},
		{"rejected", bad, []string{applied, fmt.Sprintf(rejected, 1)}},
		{"rejected again (a poll)", bad, []string{applied, fmt.Sprintf(rejected, 1)}},
		{"fetch failed", fetchFailed, []string{applied, fmt.Sprintf(rejected, 1), failed}},
		{"fetch failed again", fetchFailed, []string{applied, fmt.Sprintf(rejected, 1), failed}},
		{"recovered", good, []string{applied, fmt.Sprintf(rejected, 1), failed, recovered}},
		// A new outcome again: the recorder counts it on the event before.
		{"rejected once more", bad, []string{applied, fmt.Sprintf(rejected, 2), failed, recovered}},
	}
	for _, s := range steps {
		f.apply(s.rev)
		if got := f.sourceEvents(); !slices.Equal(got, s.want) {
			t.Fatalf("after %s, events\n%s\nwant\n%s", s.name, strings.Join(got, "\n"), strings.Join(s.want, "\n"))
		}
	}
}
