package members

import (
	"fmt"
	"testing"

	"github.com/berth-dev/berth/reconcile/members/memberstest"
	"github.com/berth-dev/berth/store"
)

// BenchmarkPodKeysUnselected is what a pod write that no service selects
// costs each of the endpoints and endpointslice controllers (berth sim's
// 100,000 pods make three or four such writes each): with no service at
// all, and with 100 services selecting other pods.
func BenchmarkPodKeysUnselected(b *testing.B) {
	old := memberstest.Pod("a", "10.0.0.1", memberstest.Labelled("app", "batch"), memberstest.NotReady)
	e := store.Event{Type: store.Modified, Old: old, Object: memberstest.Pod("a", "10.0.0.1", memberstest.Labelled("app", "batch"))}
	for _, services := range []int{0, 100} {
		b.Run(fmt.Sprintf("services=%d", services), func(b *testing.B) {
			x := NewIndex()
			for i := range services {
				x.Observe(fmt.Sprintf("default/svc-%d", i), memberstest.Service(fmt.Sprintf("svc-%d", i), map[string]string{"app": fmt.Sprint(i)}), 1)
			}
			b.ReportAllocs()
			for b.Loop() {
				if keys := x.PodKeys(e); keys != nil {
					b.Fatal(keys)
				}
			}
		})
	}
}
