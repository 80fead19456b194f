package api

// applyOrder ranks kinds so that what an object needs exists before it
// (SPEC §3): Namespaces, StorageClasses, PersistentVolumes,
// ServiceAccounts, ConfigMaps, Secrets, PVCs, Services and PodDisruptionBudgets, workloads, then
// the rest.
var applyOrder = map[string]int{
	"Namespace": 0,
	// Before the custom resources of its kind (unranked, so last).
	"CustomResourceDefinition": 0,
	"StorageClass":             1,
	// A pod's priority is resolved from its class when it is created.
	"PriorityClass": 1,
	// An Ingress is given the default class when it is created.
	"IngressClass":     1,
	"PersistentVolume": 2,
	"ServiceAccount":   3,
	// What a workload's service account may do holds from its start.
	"ClusterRole":        3,
	"Role":               3,
	"ClusterRoleBinding": 3,
	"RoleBinding":        3,
	// Defaults and bounds hold for the first pod and claim.
	"LimitRange":            3,
	"ConfigMap":             4,
	"Secret":                5,
	"PersistentVolumeClaim": 6,
	"Service":               7,
	// A budget guards the pods from the first one on.
	"PodDisruptionBudget": 7,
	// Pods start behind the policies that hold for them.
	"NetworkPolicy":         7,
	"ReplicationController": 8,
	"ReplicaSet":            8,
	"Deployment":            8,
	"StatefulSet":           8,
	"DaemonSet":             8,
	"Pod":                   8,
	"Job":                   8,
	"CronJob":               8,
	// After what it scales.
	"HorizontalPodAutoscaler": 9,
}

// ApplyRank is a kind's place in the order objects are created in, shared
// by the applier and `berth apply`: lower first; kinds not ranked come
// last. Pruning goes the other way.
func ApplyRank(k *Kind) int {
	if k != nil {
		if r, ok := applyOrder[k.GVK.Kind]; ok {
			return r
		}
	}
	return len(applyOrder)
}
