package job

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var jobKind = api.MustLookupResource("jobs")

// Admit is the store hook that gives a Job its selector, as Kubernetes'
// API server does when it stores one: unless manualSelector is true, the
// selector is the Job's uid, and the template carries it with the Job's
// name, as labels. An update that leaves the selector out keeps the
// stored one, with its labels, so that a manifest applied again (with
// no selector, as written) changes nothing.
func Admit(_ *store.Txn, k *api.Kind, obj, old api.Object) error {
	if k != jobKind || obj == nil {
		return nil
	}
	j := obj.(*api.Job)
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector {
		return nil
	}
	if j.Spec.Selector == nil && old != nil {
		if o := old.(*api.Job); o.Spec.Selector != nil {
			j.Spec.Selector = o.Spec.Selector.DeepCopy()
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{api.LabelJobControllerUID: string(j.UID)}}
	}
	uid, ok := j.Spec.Selector.MatchLabels[api.LabelJobControllerUID]
	if !ok {
		return nil
	}
	want := map[string]string{
		api.LabelJobControllerUID:       uid,
		api.LabelLegacyJobControllerUID: uid,
		api.LabelJobName:                j.Name,
		api.LabelLegacyJobName:          j.Name,
	}
	l := j.Spec.Template.Labels
	for k, v := range want {
		if l[k] != v {
			l = maps.Clone(l)
			if l == nil {
				l = map[string]string{}
			}
			maps.Copy(l, want)
			j.Spec.Template.Labels = l
			break
		}
	}
	return nil
}
