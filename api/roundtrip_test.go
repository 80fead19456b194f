package api_test

import (
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/fuzzer"
)

// roundTrips is how many random pods each round-trip test tries.
const roundTrips = 100

// TestPodRoundTripDecode decodes randomly filled Kubernetes pods with
// berth's decoder and encodes them again: every field comes back as it
// went in, none is unknown.
func TestPodRoundTripDecode(t *testing.T) {
	for seed := range int64(roundTrips) {
		in := fuzzer.Pod(seed)
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		obj, errs := api.DecodeObject(data, api.DecodeOptions{})
		if len(errs) > 0 {
			t.Fatalf("seed %d: decode: %v", seed, errs)
		}
		var out corev1.Pod
		reencode(t, obj, &out)
		if !apiequality.Semantic.DeepEqual(in, &out) {
			t.Fatalf("seed %d: the pod changed:\n%s", seed, diff.Diff(in, &out))
		}
	}
}

// TestPodRoundTripValidate sends random pods, trimmed to what berth's
// validation takes, through what berth validate does (decode a YAML
// stream, default, validate): they pass, and come back as Kubernetes would
// default them. The same holds for the pod templates of Deployments and
// ReplicaSets.
func TestPodRoundTripValidate(t *testing.T) {
	made := 0
	for seed := range int64(roundTrips) {
		in := fuzzer.Pod(seed)
		in.Status = corev1.PodStatus{}
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		valid, err := fuzzer.MakeValid(data)
		if err != nil {
			t.Logf("seed %d: %v", seed, err)
			continue
		}
		made++
		var want corev1.Pod
		if err := json.Unmarshal(valid, &want); err != nil {
			t.Fatal(err)
		}
		fuzzer.DefaultPod(&want)
		var got corev1.Pod
		decodeValidate(t, seed, valid, &got)
		// The QoS class is the server's to work out, not a default.
		want.Status.QOSClass = got.Status.QOSClass
		if !apiequality.Semantic.DeepEqual(&want, &got) {
			t.Fatalf("seed %d: the pod changed:\n%s", seed, diff.Diff(&want, &got))
		}
	}
	t.Logf("%d of %d random pods made valid", made, roundTrips)
	if made < roundTrips*8/10 {
		t.Fatalf("only %d of %d random pods could be made valid", made, roundTrips)
	}
}

// decodeValidate runs a JSON object through berth validate's steps, as
// YAML, and encodes the result into out.
func decodeValidate(t *testing.T, seed int64, data []byte, out any) {
	t.Helper()
	y, err := yaml.JSONToYAML(data)
	if err != nil {
		t.Fatal(err)
	}
	docs, errs := api.DecodeStream("pod.yaml", y, api.DecodeOptions{})
	if len(errs) > 0 || len(docs) != 1 {
		t.Fatalf("seed %d: decode: %v", seed, errs)
	}
	if errs := docs[0].DefaultAndValidate(); len(errs) > 0 {
		t.Fatalf("seed %d: validate: %v\n%s", seed, errs, y)
	}
	reencode(t, docs[0].Object, out)
}

func reencode(t *testing.T, obj any, out any) {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(fmt.Errorf("%w: %s", err, data))
	}
}
