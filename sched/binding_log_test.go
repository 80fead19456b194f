package sched

import (
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/testtool"
)

// TestBindingRefusedLogLevel: a binding the store refuses (an admission
// check, a conflict) is expected under churn: the user is told by a
// FailedScheduling event, the log has it at debug, and the pod is bound
// at the next attempt. A store that fails otherwise is still an error.
func TestBindingRefusedLogLevel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		wantLevel string
		wantMsg   string
	}{
		{"admission refusal", &store.ObjectError{Err: store.ErrForbidden, Kind: podKind, Namespace: "default", Name: "web", Detail: "not now"}, "DEBUG", "binding refused"},
		{"conflict", &store.ObjectError{Err: store.ErrConflict, Kind: podKind, Namespace: "default", Name: "web"}, "DEBUG", "binding refused"},
		{"store failure", errors.New("disk on fire"), "ERROR", "binding failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var refusals atomic.Int32 // two: a conflict is tried again at once
			s, err := store.New(store.Memory{}, store.Options{Admit: []store.AdmitFunc{
				func(_ *store.Txn, k *api.Kind, obj, old api.Object) error {
					p, ok := obj.(*api.Pod)
					if !ok || k != podKind || p.Spec.NodeName == "" || old.(*api.Pod).Spec.NodeName != "" {
						return nil
					}
					if refusals.Add(1) <= 2 {
						return tc.err
					}
					return nil
				},
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			var logged testtool.Buffer
			rec := &recorder{}
			create(t, s, makeNode("n1"))
			start(t, s, Options{
				Events: rec,
				Logger: slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})),
			})
			create(t, s, makePod("web", requests("100m", "64Mi")))
			waitPod(t, s, "web", boundTo("n1"))
			waitFor(t, func() bool { return rec.has(EventFailedScheduling, "Binding rejected: "+tc.err.Error()) })

			var line string
			for l := range strings.SplitSeq(strings.TrimSpace(logged.String()), "\n") {
				if strings.Contains(l, `"pod":"default/web"`) && strings.Contains(l, `"msg":"binding `) {
					line = l
				}
			}
			if !strings.Contains(line, `"level":"`+tc.wantLevel+`"`) || !strings.Contains(line, `"msg":"`+tc.wantMsg+`"`) {
				t.Errorf("want a %s line %q naming the pod and the error, logged:\n%s", tc.wantLevel, tc.wantMsg, logged.String())
			}
		})
	}
}
