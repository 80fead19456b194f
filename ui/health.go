package ui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/health"
)

// Health is a dashboard's verdict on an object, as Argo CD's health:
// Healthy, Progressing toward healthy, Degraded, or Unknown.
type Health string

// Health values.
const (
	Healthy     Health = "Healthy"
	Progressing Health = "Progressing"
	Degraded    Health = "Degraded"
	Unknown     Health = "Unknown"
)

// healthOf judges an object from its status, and says why when it is
// not healthy.
func healthOf(obj api.Object) (Health, string) {
	switch o := obj.(type) {
	case *api.Pod:
		return podHealth(o)
	case *api.Deployment:
		want := int32(1)
		if o.Spec.Replicas != nil {
			want = *o.Spec.Replicas
		}
		for _, c := range o.Status.Conditions {
			if c.Status == "False" && c.Message != "" {
				return Degraded, c.Message
			}
		}
		if o.Status.ObservedGeneration < o.Generation {
			return Progressing, "rollout of the new spec not yet observed"
		}
		if o.Status.UpdatedReplicas < want || o.Status.AvailableReplicas < want || o.Status.Replicas > want {
			return Progressing, fmt.Sprintf("%d of %d replicas updated, %d available", o.Status.UpdatedReplicas, want, o.Status.AvailableReplicas)
		}
		return Healthy, fmt.Sprintf("%d/%d available", o.Status.AvailableReplicas, want)
	case *api.ReplicaSet:
		want := int32(1)
		if o.Spec.Replicas != nil {
			want = *o.Spec.Replicas
		}
		if o.Status.ReadyReplicas < want {
			return Progressing, fmt.Sprintf("%d of %d ready", o.Status.ReadyReplicas, want)
		}
		return Healthy, fmt.Sprintf("%d/%d ready", o.Status.ReadyReplicas, want)
	case *api.PersistentVolumeClaim:
		if o.Status.Phase == api.ClaimBound {
			return Healthy, "Bound"
		}
		if o.Status.Phase == api.ClaimLost {
			return Degraded, "Lost"
		}
		return Progressing, string(o.Status.Phase)
	case *api.Node:
		for _, c := range o.Status.Conditions {
			if c.Type == api.NodeReady {
				if c.Status == api.ConditionTrue {
					return Healthy, "Ready"
				}
				return Degraded, strings.TrimSpace(c.Reason + " " + c.Message)
			}
		}
		return Unknown, "no Ready condition yet"
	case *api.Source:
		c := readyCondition(o)
		switch {
		case c == nil:
			return Progressing, "not synced yet"
		case c.Status == metav1.ConditionTrue:
			return Healthy, c.Message
		case c.Reason == api.ReasonProgressing:
			return Progressing, c.Message
		}
		return Degraded, c.Message
	case *api.StatefulSet, *api.DaemonSet, *api.Job, *api.CronJob:
		return kstatusHealth(obj)
	case *api.EndpointSlice:
		ready := 0
		for _, e := range o.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				ready++
			}
		}
		return Healthy, fmt.Sprintf("%d of %d endpoints ready", ready, len(o.Endpoints))
	}
	return genericHealth(obj)
}

// kstatusHealth is kstatus's verdict on a workload kind (rolled out,
// complete, failed), as `berth tree source` and a Source's wait judge it.
func kstatusHealth(obj api.Object) (Health, string) {
	st, msg := health.Of(obj)
	switch st {
	case status.CurrentStatus:
		return Healthy, msg
	case status.InProgressStatus, status.TerminatingStatus:
		return Progressing, msg
	case status.FailedStatus:
		return Degraded, msg
	}
	return Unknown, msg
}

// genericHealth reads status.conditions of a kind it has no rule for: a
// condition False with a message makes it Degraded.
func genericHealth(obj api.Object) (Health, string) {
	for _, c := range conditionsOf(obj) {
		if c.Status == "False" && (c.Type == "Ready" || c.Type == "Available") {
			return Degraded, strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return Healthy, ""
}

func podHealth(p *api.Pod) (Health, string) {
	if p.DeletionTimestamp != nil {
		return Progressing, "terminating"
	}
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return Degraded, strings.TrimSpace(cs.Name + ": " + w.Reason + " " + w.Message)
		}
	}
	switch p.Status.Phase {
	case api.PodRunning:
		for _, c := range p.Status.Conditions {
			if c.Type == api.PodReady && c.Status != api.ConditionTrue {
				return Progressing, "Running, not ready"
			}
		}
		return Healthy, "Running"
	case api.PodSucceeded:
		return Healthy, "Succeeded"
	case api.PodFailed:
		return Degraded, strings.TrimSpace("Failed " + p.Status.Reason + " " + p.Status.Message)
	}
	msg := string(p.Status.Phase)
	for _, c := range p.Status.Conditions {
		if c.Status != api.ConditionTrue && c.Message != "" {
			msg += ": " + c.Message
			break
		}
	}
	return Progressing, msg
}

// condition is any kind's status condition, as the dashboard shows it.
type condition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	Reason             string      `json:"reason"`
	Message            string      `json:"message"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
}

// conditionsOf reads status.conditions of any kind through its JSON, the
// one shape all kinds' conditions share.
func conditionsOf(obj api.Object) []condition {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	var doc struct {
		Status struct {
			Conditions []condition `json:"conditions"`
		} `json:"status"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	return doc.Status.Conditions
}

func readyCondition(s *api.Source) *metav1.Condition {
	for i := range s.Status.Conditions {
		if s.Status.Conditions[i].Type == api.SourceReady {
			return &s.Status.Conditions[i]
		}
	}
	return nil
}

// age is how long ago t was, as kubectl prints it.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
