package apiserver

import (
	"encoding/json"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// FuzzAutoscalingV1 feeds the autoscaling/v1 conversion arbitrary bodies
// and answers: a bad body is an error, never a panic, and a good one
// comes out as a v2 autoscaler that converts back to v1.
func FuzzAutoscalingV1(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"web"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"minReplicas":1,"maxReplicas":3,"targetCPUUtilizationPercentage":50}}`), false)
	f.Add([]byte(`{"kind":"HorizontalPodAutoscalerList","items":[{"spec":{"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":5}}}]},"status":{"currentMetrics":[{"type":"Resource","resource":{"name":"cpu","current":{"averageUtilization":9}}}]}}]}`), false)
	f.Add([]byte("k8s\x00\x0a\x0f"), true)
	f.Add([]byte(`{"spec":{"bogus":1}}`), false)
	f.Fuzz(func(t *testing.T, data []byte, protobuf bool) {
		_, _ = hpaV2ToV1JSON(data)
		v2, err := hpaV1BodyToV2(data, protobuf)
		if err != nil {
			return
		}
		var h autoscalingv2.HorizontalPodAutoscaler
		if err := json.Unmarshal(v2, &h); err != nil {
			t.Fatalf("v2 of a good v1 body does not decode: %v\n%s", err, v2)
		}
		if _, ok := hpaV2ToV1JSON(v2); !ok {
			t.Fatalf("v2 of a good v1 body does not convert back: %s", v2)
		}
	})
}
