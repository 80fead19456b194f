package pods

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/api"
)

// fileSet is what a downwardAPI or projected volume holds: contents and
// items (key = path) for project.
type fileSet struct {
	data  map[string][]byte
	items []api.KeyToPath
	// users are the owners of files (by path) that are not the agent's:
	// a projected token's, when the pod's containers all run as one user.
	users map[string]int
}

func (f *fileSet) add(path string, b []byte, mode *int32) {
	if f.data == nil {
		f.data = map[string][]byte{}
	}
	if _, ok := f.data[path]; !ok {
		f.items = append(f.items, api.KeyToPath{Key: path, Path: path, Mode: mode})
	} else {
		for i := range f.items {
			if f.items[i].Key == path {
				f.items[i].Mode = mode
			}
		}
	}
	f.data[path] = b
}

// downwardFiles adds the downwardAPI items' files: the pod's fields, as
// the kubelet writes them (labels and annotations as sorted key="value"
// lines), and its containers' requests and limits (resourceFieldValue).
func downwardFiles(f *fileSet, pod *api.Pod, items []corev1.DownwardAPIVolumeFile, allocatable api.ResourceList) error {
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = podFieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			v, err = containerResourceValue(pod, nil, it.ResourceFieldRef, allocatable)
		default:
			err = errors.New("neither fieldRef nor resourceFieldRef")
		}
		if err != nil {
			return configErrorf("downwardAPI %s: %v", it.Path, err)
		}
		f.add(it.Path, []byte(v), it.Mode)
	}
	return nil
}

// podFieldValue is a fieldRef's value in a downwardAPI volume.
func podFieldValue(pod *api.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if k, ok := strings.CutPrefix(path, prefix+"['"); ok {
			if k, ok = strings.CutSuffix(k, "']"); ok {
				return m[k], nil
			}
		}
	}
	return "", fmt.Errorf("fieldRef %q is not supported", path)
}

// formatMap is labels or annotations as a downwardAPI file holds them:
// key="value" lines, sorted by key.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// keyFiles adds an object's keys (or only items) to f; a key items
// name that data lacks is an error unless optional.
func keyFiles(f *fileSet, data map[string][]byte, items []corev1.KeyToPath, optional bool, what string) error {
	if len(items) == 0 {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			f.add(k, data[k], nil)
		}
		return nil
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return configErrorf("%s has no key %s", what, it.Key)
		}
		f.add(it.Path, b, it.Mode)
	}
	return nil
}

// projectedFiles gathers a projected volume's sources into one set.
func projectedFiles(ctx context.Context, env volumeEnv, pod *api.Pod, dir string, src *corev1.ProjectedVolumeSource) (*fileSet, error) {
	refs := env.refs
	f := &fileSet{}
	for i, s := range src.Sources {
		switch {
		case s.ConfigMap != nil:
			cm, err := getConfigMap(ctx, refs, pod.Namespace, s.ConfigMap.Name)
			if err != nil {
				if isOptional(s.ConfigMap.Optional) {
					continue
				}
				return nil, err
			}
			data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
			for k, v := range cm.Data {
				data[k] = []byte(v)
			}
			maps.Copy(data, cm.BinaryData)
			if err := keyFiles(f, data, s.ConfigMap.Items, isOptional(s.ConfigMap.Optional), "ConfigMap "+pod.Namespace+"/"+s.ConfigMap.Name); err != nil {
				return nil, err
			}
		case s.Secret != nil:
			sec, err := getSecret(ctx, refs, pod.Namespace, s.Secret.Name)
			if err != nil {
				if isOptional(s.Secret.Optional) {
					continue
				}
				return nil, err
			}
			data := map[string][]byte{}
			for k, v := range secretData(sec) {
				data[k] = []byte(v)
			}
			if err := keyFiles(f, data, s.Secret.Items, isOptional(s.Secret.Optional), "Secret "+pod.Namespace+"/"+s.Secret.Name); err != nil {
				return nil, err
			}
		case s.DownwardAPI != nil:
			if err := downwardFiles(f, pod, s.DownwardAPI.Items, env.allocatable); err != nil {
				return nil, err
			}
		case s.ServiceAccountToken != nil:
			tok, err := projectedToken(ctx, env, pod, filepath.Join(dir, s.ServiceAccountToken.Path), s.ServiceAccountToken)
			if err != nil {
				return nil, err
			}
			f.add(s.ServiceAccountToken.Path, tok, nil)
			projectedTokenAccess(f, pod, s.ServiceAccountToken.Path)
		default:
			return nil, configErrorf("projected source %d: only configMap, secret, downwardAPI and serviceAccountToken are supported", i)
		}
	}
	return f, nil
}

// projectedToken is a projected serviceAccountToken's content: the token
// at path while it has lived less than 80% of its life, else a new one the
// API server issues for the pod, its audience and expirationSeconds, as
// the kubelet's token manager rotates them.
func projectedToken(ctx context.Context, env volumeEnv, pod *api.Pod, path string, src *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	if tokenFresh(path, env.now) {
		if b, err := os.ReadFile(path); err == nil {
			return b, nil
		}
	}
	ti, ok := env.refs.(TokenIssuer)
	if !ok || IsStatic(pod) {
		return nil, configErrorf("serviceAccountToken %s: no API server issues tokens for this pod (a static pod, or a standalone agent)", src.Path)
	}
	var audiences []string
	if src.Audience != "" {
		audiences = []string{src.Audience}
	}
	seconds := int64(defaultTokenSeconds)
	if src.ExpirationSeconds != nil {
		seconds = *src.ExpirationSeconds
	}
	tok, err := ti.ServiceAccountToken(ctx, pod, audiences, seconds)
	if err != nil {
		return nil, fmt.Errorf("serviceAccountToken %s: service account %s/%s: %w", src.Path, pod.Namespace, pod.Spec.ServiceAccountName, err)
	}
	return []byte(tok), nil
}

// projectedTokenAccess sets the mode and owner of a projected token as
// the kubelet's projected volume does: when the pod's containers all run
// as one user (FsUser) or it has an fsGroup, the token is 0600 and that
// user's (the group then reads it, as it does every file of the volume);
// else it has the volume's defaultMode.
func projectedTokenAccess(f *fileSet, pod *api.Pod, path string) {
	u := fsUser(pod)
	if gid, _ := podFSGroup(pod); u == nil && gid == nil {
		return
	}
	mode := int32(0o600)
	f.add(path, f.data[path], &mode)
	if u != nil {
		if f.users == nil {
			f.users = map[string]int{}
		}
		f.users[path] = int(*u)
	}
}
