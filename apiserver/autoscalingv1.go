package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// HorizontalPodAutoscalers are stored as autoscaling/v2. kubectl
// autoscale (up to 1.33) and older tools speak autoscaling/v1, whose
// object is a CPU target alone: create, get, list, update and delete on
// /apis/autoscaling/v1 are converted, as Kubernetes converts them, to the
// v2 path and back, through the one request chain. Discovery lists v2
// alone, so kubectl get reads v2; v1 is not watched.

const (
	autoscalingV1Prefix = "/apis/autoscaling/v1/"
	autoscalingV2Prefix = "/apis/autoscaling/v2/"
)

// serveAutoscalingV1 answers a request on the v1 path.
func (s *Server) serveAutoscalingV1(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
		WriteError(w, badRequest("autoscaling/v1 is not watched here: watch autoscaling/v2"))
		return
	}
	inner := r.Clone(r.Context())
	inner.URL.Path = autoscalingV2Prefix + strings.TrimPrefix(r.URL.Path, autoscalingV1Prefix)
	inner.URL.RawPath = ""
	inner.RequestURI = inner.URL.RequestURI()
	if r.Method == http.MethodPost || r.Method == http.MethodPut {
		body, err := s.readV1Body(w, r)
		if err != nil {
			WriteError(w, err)
			return
		}
		inner.Body = io.NopCloser(bytes.NewReader(body))
		inner.ContentLength = int64(len(body))
		inner.Header.Set("Content-Type", mediaJSON)
	}
	if accept := r.Header.Get("Accept"); accept == "" || strings.Contains(accept, mediaProtobuf) {
		inner.Header.Set("Accept", mediaJSON)
	}
	rec := httptest.NewRecorder()
	s.serveAPI(rec, inner)
	res := rec.Result()
	body := rec.Body.Bytes()
	if converted, ok := hpaV2ToV1JSON(body); ok {
		body = converted
	}
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(body)
}

// readV1Body reads a v1 object (JSON, or protobuf as kubectl sends it)
// and returns it as v2 JSON.
func (s *Server) readV1Body(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	data, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	return hpaV1BodyToV2(data, contentType(r) == mediaProtobuf)
}

// hpaV1BodyToV2 decodes a v1 body strictly and returns it as v2 JSON.
func hpaV1BodyToV2(data []byte, protobuf bool) ([]byte, error) {
	var err error
	if protobuf {
		if data, err = protobufToJSON(data); err != nil {
			return nil, err
		}
	}
	var v1 autoscalingv1.HorizontalPodAutoscaler
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v1); err != nil {
		return nil, badRequest("the body is not an autoscaling/v1 HorizontalPodAutoscaler: %v", err)
	}
	return json.Marshal(hpaV1ToV2(&v1))
}

// hpaV1ToV2 converts as Kubernetes does: the CPU target becomes a cpu
// Resource metric (none leaves the v2 default of 80%).
func hpaV1ToV2(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: in.ObjectMeta}
	out.APIVersion, out.Kind = autoscalingv2.SchemeGroupVersion.String(), "HorizontalPodAutoscaler"
	out.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef)
	out.Spec.MinReplicas, out.Spec.MaxReplicas = in.Spec.MinReplicas, in.Spec.MaxReplicas
	if t := in.Spec.TargetCPUUtilizationPercentage; t != nil {
		target := *t
		out.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target},
		}}}
	}
	return out
}

// hpaV2ToV1 keeps of v2 what v1 holds: the first cpu utilization target
// and its current value.
func hpaV2ToV1(in *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv1.HorizontalPodAutoscaler {
	out := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: in.ObjectMeta}
	out.APIVersion, out.Kind = autoscalingv1.SchemeGroupVersion.String(), "HorizontalPodAutoscaler"
	out.Spec.ScaleTargetRef = autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef)
	out.Spec.MinReplicas, out.Spec.MaxReplicas = in.Spec.MinReplicas, in.Spec.MaxReplicas
	for i, m := range in.Spec.Metrics {
		if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource.Name != corev1.ResourceCPU || m.Resource.Target.AverageUtilization == nil {
			continue
		}
		out.Spec.TargetCPUUtilizationPercentage = m.Resource.Target.AverageUtilization
		if i < len(in.Status.CurrentMetrics) {
			if st := in.Status.CurrentMetrics[i].Resource; st != nil {
				out.Status.CurrentCPUUtilizationPercentage = st.Current.AverageUtilization
			}
		}
		break
	}
	out.Status.ObservedGeneration = in.Status.ObservedGeneration
	out.Status.LastScaleTime = in.Status.LastScaleTime
	out.Status.CurrentReplicas, out.Status.DesiredReplicas = in.Status.CurrentReplicas, in.Status.DesiredReplicas
	return out
}

// hpaV2ToV1JSON converts an answer holding a v2 autoscaler or list; any
// other answer (a Status, a Table) is left as it is.
func hpaV2ToV1JSON(body []byte) ([]byte, bool) {
	var head struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(body, &head) != nil {
		return nil, false
	}
	switch head.Kind {
	case "HorizontalPodAutoscaler":
		var in autoscalingv2.HorizontalPodAutoscaler
		if json.Unmarshal(body, &in) != nil {
			return nil, false
		}
		out, err := json.Marshal(hpaV2ToV1(&in))
		return out, err == nil
	case "HorizontalPodAutoscalerList":
		var in autoscalingv2.HorizontalPodAutoscalerList
		if json.Unmarshal(body, &in) != nil {
			return nil, false
		}
		out := autoscalingv1.HorizontalPodAutoscalerList{ListMeta: in.ListMeta}
		out.APIVersion, out.Kind = autoscalingv1.SchemeGroupVersion.String(), "HorizontalPodAutoscalerList"
		for i := range in.Items {
			out.Items = append(out.Items, *hpaV2ToV1(&in.Items[i]))
		}
		if out.Items == nil {
			out.Items = []autoscalingv1.HorizontalPodAutoscaler{}
		}
		data, err := json.Marshal(out)
		return data, err == nil
	}
	return nil, false
}
