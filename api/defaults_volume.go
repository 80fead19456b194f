package api

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
)

// defaultVolume gives a pod volume the defaults Kubernetes gives it,
// including those of the sources held as Kubernetes' types, so that a
// volume reads back as Kubernetes would serve it.
func defaultVolume(v *Volume) {
	if allNil(&v.VolumeSource) {
		v.EmptyDir = &EmptyDirVolumeSource{}
	}
	mode := func(m **int32) {
		if *m == nil {
			d := DefaultVolumeFileMode
			*m = &d
		}
	}
	if v.ConfigMap != nil {
		mode(&v.ConfigMap.DefaultMode)
	}
	if v.Secret != nil {
		mode(&v.Secret.DefaultMode)
	}
	if v.HostPath != nil && v.HostPath.Type == nil {
		t := HostPathUnset
		v.HostPath.Type = &t
	}
	if d := v.DownwardAPI; d != nil {
		mode(&d.DefaultMode)
		defaultDownwardAPIItems(d.Items)
	}
	if p := v.Projected; p != nil {
		mode(&p.DefaultMode)
		for i := range p.Sources {
			s := &p.Sources[i]
			if s.DownwardAPI != nil {
				defaultDownwardAPIItems(s.DownwardAPI.Items)
			}
			if t := s.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				hour := int64(3600)
				t.ExpirationSeconds = &hour
			}
		}
	}
	if r := v.RBD; r != nil {
		defaultString(&r.RBDPool, "rbd")
		defaultString(&r.RadosUser, "admin")
		defaultString(&r.Keyring, "/etc/ceph/keyring")
	}
	if i := v.ISCSI; i != nil {
		defaultString(&i.ISCSIInterface, "default")
	}
	if a := v.AzureDisk; a != nil {
		if a.CachingMode == nil {
			m := corev1.AzureDataDiskCachingReadWrite
			a.CachingMode = &m
		}
		if a.FSType == nil {
			t := "ext4"
			a.FSType = &t
		}
		if a.ReadOnly == nil {
			f := false
			a.ReadOnly = &f
		}
		if a.Kind == nil {
			k := corev1.AzureSharedBlobDisk
			a.Kind = &k
		}
	}
	if s := v.ScaleIO; s != nil {
		defaultString(&s.StorageMode, "ThinProvisioned")
		defaultString(&s.FSType, "xfs")
	}
	if i := v.Image; i != nil && i.PullPolicy == "" {
		i.PullPolicy = corev1.PullPolicy(DefaultPullPolicy(i.Reference))
	}
	if e := v.Ephemeral; e != nil && e.VolumeClaimTemplate != nil && e.VolumeClaimTemplate.Spec.VolumeMode == nil {
		m := corev1.PersistentVolumeFilesystem
		e.VolumeClaimTemplate.Spec.VolumeMode = &m
	}
}

func defaultDownwardAPIItems(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		if f := items[i].FieldRef; f != nil && f.APIVersion == "" {
			f.APIVersion = "v1"
		}
	}
}

func defaultString(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

// allNil reports whether every pointer field of a struct is nil.
func allNil(s *VolumeSource) bool {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			return false
		}
	}
	return true
}
