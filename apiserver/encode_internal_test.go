package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

// storedJSON encodes each object as json.Marshal does, encodes an object
// it has just encoded only once, and never answers one object with
// another's bytes, however many goroutines ask and however the table's
// slots collide.
func TestStoredJSON(t *testing.T) {
	objs := make([]api.Object, 3000)
	for i := range objs {
		objs[i] = &api.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("c%d", i)},
			Data:       map[string]string{"i": fmt.Sprint(i), "html": "<b>&</b>"},
		}
	}
	want := func(o api.Object) []byte {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	first, err := storedJSON(objs[0])
	if err != nil {
		t.Fatal(err)
	}
	again, _ := storedJSON(objs[0])
	if !bytes.Equal(first, want(objs[0])) || &again[0] != &first[0] {
		t.Fatalf("second encoding of the same object not taken from the table: %s", again)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range objs {
				o := objs[(i*7+g*13)%len(objs)]
				got, err := storedJSON(o)
				if err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(got, want(o)) {
					t.Errorf("%s answered with %s", o.GetName(), got)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Many readers of one object at once encode it once: each encoding of a
// large object is megabytes, and 200 parallel GETs of a 1.3 MB ConfigMap
// that each encoded it held gigabytes.
func TestStoredJSONEncodesOnceForConcurrentReaders(t *testing.T) {
	big := &api.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "big", ResourceVersion: "7"},
		Data:       map[string]string{"blob": string(bytes.Repeat([]byte("x"), 1<<20))},
	}
	before := storedEncodings.Load()
	start := make(chan struct{})
	var wg sync.WaitGroup
	datas := make([][]byte, 200)
	for i := range datas {
		wg.Go(func() {
			<-start
			data, err := storedJSON(big)
			if err != nil {
				t.Error(err)
			}
			datas[i] = data
		})
	}
	close(start)
	wg.Wait()
	if n := storedEncodings.Load() - before; n != 1 {
		t.Fatalf("200 concurrent readers encoded the object %d times, want once", n)
	}
	for _, d := range datas {
		if &d[0] != &datas[0][0] {
			t.Fatal("readers got copies, not the shared bytes")
		}
	}
}
