package store

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/berth-dev/berth/api"
)

// TestGenerateNameDrawsAgain checks that a generated name already taken
// is drawn again, and that a name given outright is still refused when
// taken.
func TestGenerateNameDrawsAgain(t *testing.T) {
	ctx := context.Background()
	s, err := New(Memory{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rand.Seed(7)
	first := "web-" + rand.String(5)
	if _, err := s.Create(ctx, &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: first}}); err != nil {
		t.Fatal(err)
	}
	rand.Seed(7) // the next generated name is first, taken
	obj, err := s.Create(ctx, &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "web-"}})
	if err != nil {
		t.Fatalf("generated name: %v", err)
	}
	if n := obj.GetName(); n == first || len(n) != len(first) {
		t.Errorf("generated %q, first %q", n, first)
	}
	if _, err := s.Create(ctx, &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: first}}); !IsAlreadyExists(err) {
		t.Errorf("a taken name given outright: %v", err)
	}
}
