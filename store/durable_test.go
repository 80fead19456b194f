package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/testtool"
)

// stallBackend keeps nothing and, while stalled, holds each commit until
// the test releases it with the commit's outcome.
type stallBackend struct {
	Memory
	stalled atomic.Bool
	entered chan uint64
	release chan error
	// stop ends every hold, for a test that fails while one is on.
	stop chan struct{}
}

func newStallBackend() *stallBackend {
	return &stallBackend{entered: make(chan uint64, 16), release: make(chan error), stop: make(chan struct{})}
}

func (b *stallBackend) Commit(rev uint64, _ []Op) error {
	if !b.stalled.Load() {
		return nil
	}
	b.entered <- rev
	select {
	case err := <-b.release:
		return err
	case <-b.stop:
		return errors.New("test over")
	}
}

func cm(name, value string) *api.ConfigMap {
	return &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"v": value}}
}

// A transaction that reads what another wrote before that is durable
// answers only once it is: as the state it read, when the backend takes
// the write; with ErrNotCommitted (nothing written, try again) when the
// backend refuses it, never with a 409, a 404 or an unchanged object
// that rests on a write that never was.
func TestAnswersWaitForWhatTheyRead(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("refused=%v", refuse), func(t *testing.T) {
			b := newStallBackend()
			s, err := New(b, Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			defer close(b.stop)
			ctx := context.Background()
			a, err := s.Create(ctx, cm("a", "1"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Create(ctx, cm("d", "1")); err != nil {
				t.Fatal(err)
			}
			oldRV := a.GetResourceVersion()
			durable := s.Revision()

			// One transaction creates x, changes a and deletes d; its
			// commit stalls.
			b.stalled.Store(true)
			first := make(chan error, 1)
			go func() {
				_, err := s.Txn(ctx, func(tx *Txn) error {
					if _, err := tx.Create(cm("x", "1")); err != nil {
						return err
					}
					if _, err := tx.Update(cm("a", "2")); err != nil {
						return err
					}
					_, err := tx.Delete(cmKind, "default", "d", DeleteOptions{})
					return err
				})
				first <- err
			}()
			<-b.entered

			dependents := []struct {
				name string
				run  func() error
				want error // once the stalled commit is durable
			}{
				{"create x again", func() error { _, err := s.Create(ctx, cm("x", "1")); return err }, ErrAlreadyExists},
				{"update a at its old resourceVersion", func() error {
					c := cm("a", "3")
					c.ResourceVersion = oldRV
					_, err := s.Update(ctx, c)
					return err
				}, ErrConflict},
				{"delete d", func() error {
					_, err := s.Delete(ctx, cmKind, "default", "d", DeleteOptions{})
					return err
				}, ErrNotFound},
				{"update a to what it holds", func() error { _, err := s.Update(ctx, cm("a", "2")); return err }, nil},
				{"dry run of create x", func() error {
					_, err := s.DryRun(ctx, func(tx *Txn) error { _, err := tx.Create(cm("x", "1")); return err })
					return err
				}, ErrAlreadyExists},
				// An update or a delete reads its object first, from the
				// tables a write would find: not a 404 from the snapshot.
				{"read x for a write", func() error {
					obj, err := s.GetForWrite(ctx, cmKind, "default", "x")
					if err == nil && obj.GetName() != "x" {
						return fmt.Errorf("read %s", obj.GetName())
					}
					return err
				}, nil},
				{"delete a with the old resourceVersion as precondition", func() error {
					_, err := s.Delete(ctx, cmKind, "default", "a", DeleteOptions{Preconditions: &Preconditions{ResourceVersion: oldRV}})
					return err
				}, ErrConflict},
			}
			answers := make([]chan error, len(dependents))
			for i, d := range dependents {
				answers[i] = make(chan error, 1)
				go func() { answers[i] <- d.run() }()
				// Each waits behind the stalled commit: the commit loop
				// holds one more entry, and no answer came.
				testtool.WaitFor(t, 10*time.Second, d.name+" to wait for the stalled commit", func() error {
					select {
					case err := <-answers[i]:
						t.Fatalf("%s answered %v before what it read was durable", d.name, err)
					default:
					}
					if n := s.Waiting(); n != i+1 {
						return fmt.Errorf("%d waiting", n)
					}
					return nil
				})
			}
			// Readers still see the last durable revision.
			if _, err := s.Get(cmKind, "default", "x"); !IsNotFound(err) || s.Revision() != durable {
				t.Fatalf("x read before it is durable: %v at revision %d, durable %d", err, s.Revision(), durable)
			}

			var outcome error
			if refuse {
				outcome = errors.New("election lost")
			}
			b.release <- outcome
			if err := <-first; !errors.Is(err, outcome) {
				t.Fatalf("the stalled write: %v, want %v", err, outcome)
			}
			for i, d := range dependents {
				err := <-answers[i]
				want := d.want
				if refuse {
					want = ErrNotCommitted
				}
				if !errors.Is(err, want) || (want == nil && err != nil) {
					t.Errorf("%s: %v, want %v", d.name, err, want)
				}
				if refuse && (IsAlreadyExists(err) || IsNotFound(err) || IsConflict(err)) {
					t.Errorf("%s rests on the refused commit: %v", d.name, err)
				}
			}
			if refuse {
				if _, err := s.Get(cmKind, "default", "x"); !IsNotFound(err) {
					t.Fatalf("the refused create is readable: %v", err)
				}
			}
		})
	}
}

// A transaction that reads only what is durable answers at once, with no
// turn through the commit loop.
func TestAnswerOnDurableStateIsImmediate(t *testing.T) {
	b := newStallBackend()
	s, err := New(b, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer close(b.stop)
	ctx := context.Background()
	if _, err := s.Create(ctx, cm("a", "1")); err != nil {
		t.Fatal(err)
	}
	b.stalled.Store(true) // a commit now would hold the test
	if _, err := s.Create(ctx, cm("a", "1")); !IsAlreadyExists(err) {
		t.Fatalf("create again: %v", err)
	}
}

// A caller that stops waiting for what it read is told that nothing of
// its was written, not the answer that rests on an undurable write.
func TestAnswerWaitEndsWithTheCaller(t *testing.T) {
	b := newStallBackend()
	s, err := New(b, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer close(b.stop)
	b.stalled.Store(true)
	first := make(chan error, 1)
	go func() { _, err := s.Create(context.Background(), cm("x", "1")); first <- err }()
	<-b.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Create(ctx, cm("x", "1")); !errors.Is(err, ErrNotCommitted) || !errors.Is(err, context.Canceled) {
		t.Fatalf("create again, the caller gone: %v", err)
	}
	b.release <- nil
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}
