package api

import (
	"fmt"
	"slices"
)

// StaticPodReferences lists where spec refers to other API objects, one
// entry per reference, naming the field and the object, e.g.
// `spec.volumes[0].secret: Secret "db"`. A static pod may refer to none:
// its mirror pod is posted with the node's credential in a namespace the
// node chooses, and a reference there would let the node read a Secret,
// ConfigMap or claim, or mint a service account's token, that no pod the
// scheduler bound to it uses. Kubernetes' NodeRestriction admission
// refuses such mirror pods; the agent refuses such static pods. The
// default service account (which defaulting names for every pod) is no
// reference: a mirror pod gets no token of it.
func StaticPodReferences(spec *PodSpec) []string {
	var out []string
	add := func(field, kind, name string) {
		out = append(out, fmt.Sprintf("%s: %s %q", field, kind, name))
	}
	if sa := spec.ServiceAccountName; sa != "" && sa != DefaultServiceAccountName {
		add("spec.serviceAccountName", "ServiceAccount", sa)
	}
	for i, v := range spec.Volumes {
		field := fmt.Sprintf("spec.volumes[%d]", i)
		if v.Secret != nil {
			add(field+".secret", "Secret", v.Secret.SecretName)
		}
		if v.ConfigMap != nil {
			add(field+".configMap", "ConfigMap", v.ConfigMap.Name)
		}
		if v.PersistentVolumeClaim != nil {
			add(field+".persistentVolumeClaim", "PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName)
		}
	}
	n := len(spec.InitContainers)
	for i, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		field := fmt.Sprintf("spec.initContainers[%d]", i)
		if i >= n {
			field = fmt.Sprintf("spec.containers[%d]", i-n)
		}
		for j, e := range c.EnvFrom {
			if e.SecretRef != nil {
				add(fmt.Sprintf("%s.envFrom[%d].secretRef", field, j), "Secret", e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add(fmt.Sprintf("%s.envFrom[%d].configMapRef", field, j), "ConfigMap", e.ConfigMapRef.Name)
			}
		}
		for j, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add(fmt.Sprintf("%s.env[%d].valueFrom.secretKeyRef", field, j), "Secret", e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add(fmt.Sprintf("%s.env[%d].valueFrom.configMapKeyRef", field, j), "ConfigMap", e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	return out
}
