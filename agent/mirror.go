package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/agent/pods"
	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// MirrorManager posts a read-only mirror pod on the API server for each
// static pod, so that `berth get pods` shows what the node runs on its
// own, and keeps the mirrors' status that of the static pods.
type MirrorManager struct {
	c      *client.Client
	node   string
	logger *slog.Logger

	// Posted, when set, is called with each static pod whose mirror Sync
	// posted: the mirror has no status yet.
	Posted func(static *api.Pod)
}

// NewMirrorManager returns a MirrorManager for the node's credential.
func NewMirrorManager(c *client.Client, nodeName string, logger *slog.Logger) *MirrorManager {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &MirrorManager{c: c, node: nodeName, logger: logger}
}

var podKind = api.KindOf(&api.Pod{})

// Sync makes the node's mirror pods match the static pods: it creates a
// mirror for each static pod, replaces a mirror whose config hash changed
// and deletes the node's mirrors no longer wanted. It goes on past a
// failure and returns every error.
func (m *MirrorManager) Sync(ctx context.Context, static []*api.Pod) error {
	objs, _, err := m.c.List(ctx, podKind, "", client.ListOptions{FieldSelector: "spec.nodeName=" + m.node})
	if err != nil {
		return fmt.Errorf("list pods of node %s: %w", m.node, err)
	}
	mirrors := map[string]*api.Pod{}
	for _, o := range objs {
		if p := o.(*api.Pod); isMirror(p) {
			mirrors[p.Namespace+"/"+p.Name] = p
		}
	}
	var nodeUID types.UID
	var errs []error
	for _, sp := range static {
		key := sp.Namespace + "/" + sp.Name
		hash := sp.Annotations[pods.AnnotationConfigHash]
		cur, ok := mirrors[key]
		delete(mirrors, key)
		if ok && cur.Annotations[api.AnnotationMirror] == hash && cur.DeletionTimestamp == nil {
			continue
		}
		if ok {
			if err := m.delete(ctx, cur); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if nodeUID == "" {
			obj, err := m.c.Get(ctx, api.KindOf(&api.Node{}), "", m.node)
			if err != nil {
				return errors.Join(append(errs, fmt.Errorf("get node %s: %w", m.node, err))...)
			}
			nodeUID = obj.GetUID()
		}
		if _, err := m.c.Create(ctx, m.mirrorOf(sp, nodeUID)); err != nil {
			errs = append(errs, fmt.Errorf("create mirror pod %s: %w", key, err))
			continue
		}
		m.logger.Info("posted mirror pod", "pod", key)
		if m.Posted != nil {
			m.Posted(sp)
		}
	}
	for _, cur := range mirrors {
		if err := m.delete(ctx, cur); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// delete removes a mirror pod at once (it runs nothing, so it has nothing
// to wait for), only if it is still the one that was read.
func (m *MirrorManager) delete(ctx context.Context, p *api.Pod) error {
	zero := int64(0)
	uid := p.UID
	_, err := m.c.Delete(ctx, podKind, p.Namespace, p.Name, &metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !client.IsNotFound(err) {
		return fmt.Errorf("delete mirror pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	m.logger.Info("deleted mirror pod", "pod", p.Namespace+"/"+p.Name)
	return nil
}

// mirrorOf is the mirror pod of a static pod: a copy marked with its
// config hash and owned by the Node, as the kubelet posts it, so that the
// Node's deletion takes its mirrors with it.
func (m *MirrorManager) mirrorOf(sp *api.Pod, nodeUID types.UID) *api.Pod {
	p := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        sp.Name,
			Namespace:   sp.Namespace,
			Labels:      sp.Labels,
			Annotations: map[string]string{},
		},
		Spec: *sp.Spec.DeepCopy(),
	}
	for k, v := range sp.Annotations {
		p.Annotations[k] = v
	}
	p.Annotations[api.AnnotationMirror] = sp.Annotations[pods.AnnotationConfigHash]
	controller := true
	p.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Node", Name: m.node, UID: nodeUID, Controller: &controller,
	}}
	p.Spec.NodeName = m.node
	return p
}

// ReportStatus writes the static pod's status onto its mirror pod. It
// returns an error for which client.IsNotFound holds when the mirror is
// not posted (yet), and does nothing to a mirror of another version.
func (m *MirrorManager) ReportStatus(ctx context.Context, static *api.Pod, status api.PodStatus) error {
	key := static.Namespace + "/" + static.Name
	for attempt := 0; ; attempt++ {
		obj, err := m.c.Get(ctx, podKind, static.Namespace, static.Name)
		if err != nil {
			return fmt.Errorf("report status of mirror pod %s: %w", key, err)
		}
		cur := obj.(*api.Pod)
		if cur.Annotations[api.AnnotationMirror] != static.Annotations[pods.AnnotationConfigHash] {
			return nil
		}
		next := cur.DeepCopy()
		next.Status = *status.DeepCopy()
		_, err = m.c.UpdateStatus(ctx, next)
		if err == nil {
			return nil
		}
		if !client.IsConflict(err) || attempt >= 3 {
			return fmt.Errorf("report status of mirror pod %s: %w", key, err)
		}
	}
}
