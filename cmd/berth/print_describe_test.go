package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/berth-dev/berth/api"
)

func findObject(t *testing.T, objs []api.Object, name string) api.Object {
	t.Helper()
	for _, o := range objs {
		if o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no fixture named %q", name)
	return nil
}

func TestDescribeGolden(t *testing.T) {
	kinds := fixtureKinds()
	events := typed[*api.Event](fixtureEvents())
	pods := typed[*api.Pod](fixturePods())
	rss := typed[*api.ReplicaSet](fixtureReplicaSets())
	endpoints := typed[*api.Endpoints](fixtureEndpoints())
	_, _, _, quotas := fixtureConfig()
	ingressContext := describeContext{
		services:       typed[*api.Service](fixtureServices()),
		endpointSlices: typed[*api.EndpointSlice](fixtureEndpointSlices()),
		events: []*api.Event{{ObjectMeta: meta("default", "shop.1", time.Minute, nil), Type: api.EventTypeWarning,
			Reason: "ServiceNotFound", Message: "service default/api not found",
			InvolvedObject: api.ObjectReference{Kind: "Ingress", Namespace: "default", Name: "shop", UID: "uid-default-shop"},
			Source:         api.EventSource{Component: "ingress-controller"}, FirstTimestamp: ago(time.Minute), LastTimestamp: ago(time.Minute), Count: 1}},
	}
	tests := []struct {
		name     string
		resource string
		object   string
		dc       describeContext
	}{
		{"pod-crashloop", "pods", "web-7d4b9c-fghij", describeContext{events: events}},
		{"pod-running", "pods", "web-7d4b9c-abcde", describeContext{events: events}},
		{"pod-pending", "pods", "db-0", describeContext{}},
		{"pod-init", "pods", "cache-0", describeContext{}},
		{"pod-terminating", "pods", "web-old-zz9", describeContext{}},
		{"node-ready", "nodes", "node-1", describeContext{pods: pods, lease: typed[*api.Lease](fixtureLeases())[0]}},
		{"node-cordoned", "nodes", "node-2", describeContext{pods: pods}},
		{"node-new", "nodes", "node-3", describeContext{}},
		{"deployment", "deployments", "web", describeContext{events: events, replicaSets: rss}},
		{"deployment-no-replicasets", "deployments", "api", describeContext{}},
		{"replicaset", "replicasets", "web-7d4b9c", describeContext{pods: pods}},
		{"replicationcontroller", "replicationcontrollers", "legacy", describeContext{}},
		{"statefulset", "statefulsets", "db", describeContext{}},
		{"statefulset-on-delete", "statefulsets", "cache", describeContext{}},
		{"daemonset", "daemonsets", "logs", describeContext{}},
		{"service", "services", "web", describeContext{endpoints: endpoints[0]}},
		{"ingress", "ingresses", "shop", ingressContext},
		{"ingress-default-backend", "ingresses", "legacy", ingressContext},
		{"service-headless", "services", "dns", describeContext{}},
		{"service-externalname", "services", "payments", describeContext{}},
		{"pvc", "persistentvolumeclaims", "data", describeContext{pods: pods}},
		{"pvc-pending", "persistentvolumeclaims", "scratch", describeContext{}},
		{"pv", "persistentvolumes", "pvc-3f2a9c1e", describeContext{}},
		{"pv-hostpath", "persistentvolumes", "nfs-share", describeContext{}},
		{"source-ready", "sources", "fleet", describeContext{events: events}},
		{"source-failed", "sources", "local", describeContext{}},
		{"source-new", "sources", "site", describeContext{}},
		{"configmap", "configmaps", "web-config", describeContext{}},
		{"secret", "secrets", "db-creds", describeContext{}},
		{"namespace", "namespaces", "default", describeContext{}},
		{"namespace-with-quota", "namespaces", "shop", describeContext{quotas: typed[*api.ResourceQuota](quotas), limitRanges: typed[*api.LimitRange](fixtureLimitRanges())}},
		{"limitrange", "limitranges", "bounds", describeContext{}},
		{"hpa", "horizontalpodautoscalers", "web", describeContext{}},
		{"hpa-new", "horizontalpodautoscalers", "api", describeContext{}},
		{"resourcequota", "resourcequotas", "compute", describeContext{}},
		{"poddisruptionbudget", "poddisruptionbudgets", "web", describeContext{}},
		{"poddisruptionbudget-max-unavailable", "poddisruptionbudgets", "db", describeContext{}},
		{"job-complete", "jobs", "migrate", describeContext{}},
		{"job-failed", "jobs", "flaky", describeContext{}},
		{"job-indexed-suspended", "jobs", "shards", describeContext{}},
		{"cronjob", "cronjobs", "backup", describeContext{}},
		{"cronjob-suspended", "cronjobs", "report", describeContext{}},
		{"role", "roles", "configmap-writer", describeContext{}},
		{"clusterrole", "clusterroles", "view", describeContext{}},
		{"clusterrole-paths", "clusterroles", "system:public-info-viewer", describeContext{}},
		{"rolebinding", "rolebindings", "operator", describeContext{}},
		{"clusterrolebinding", "clusterrolebindings", "viewers", describeContext{}},
		{"storageclass", "storageclasses", "local-path", describeContext{}},
		{"priorityclass", "priorityclasses", "system-node-critical", describeContext{}},
		{"storageclass-expandable", "storageclasses", "fast", describeContext{}},
		{"serviceaccount", "serviceaccounts", "builder", describeContext{}},
		{"endpoints", "endpoints", "web", describeContext{}},
		{"endpoints-empty", "endpoints", "payments", describeContext{}},
		{"generic-event", "events", "web-7d4b9c-fghij.2", describeContext{events: events}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := kindOf(t, tt.resource)
			obj := findObject(t, kinds[tt.resource], tt.object)
			tt.dc.now = fixtureNow
			var buf bytes.Buffer
			if err := describeObject(&buf, k, obj, tt.dc); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "describe/"+tt.name, buf.String())
		})
	}
}

// TestEventsFor checks which events describe shows: those about the
// object by UID, or by kind, namespace and name when recorded without
// one, oldest first.
func TestEventsFor(t *testing.T) {
	pod := findObject(t, fixturePods(), "web-7d4b9c-fghij")
	events := typed[*api.Event](fixtureEvents())
	noUID := *events[3]
	noUID.InvolvedObject = api.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-7d4b9c-fghij"}
	otherNS := noUID
	otherNS.InvolvedObject.Namespace = "shop"
	got := eventsFor(pod, append(events, &noUID, &otherNS))
	var reasons []string
	for _, e := range got {
		reasons = append(reasons, e.Reason)
	}
	want := []string{"ScalingReplicaSet", "Scheduled", "Started", "BackOff"}
	if len(reasons) != len(want) {
		t.Fatalf("events = %v, want %v", reasons, want)
	}
	for i := range want {
		if reasons[i] != want[i] {
			t.Fatalf("events = %v, want %v", reasons, want)
		}
	}
}
