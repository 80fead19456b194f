package sim

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

var deploymentKind = api.KindOf(&api.Deployment{})

// rolloutName is the Deployment of the rollout scenario.
const rolloutName = "web"

// rollout runs the rollout scenario on running agents: a Deployment of
// o.Pods replicas, written to the store, until every replica is
// available; then a new image, until the rollout is complete. Through the
// rollout it follows every pod change and counts, at every revision, the
// pods that are Running, Ready and not being deleted (available: the
// Deployment has no minReadySeconds), and samples the Deployment's own
// status.availableReplicas.
func rollout(ctx context.Context, st *store.Store, o *Options, progressf func(string, ...any)) (*Result, error) {
	replicas := int32(o.Pods)
	d := makeDeployment(replicas, o)
	start := time.Now()
	if _, err := st.Create(ctx, d); err != nil {
		return nil, fmt.Errorf("sim: create deployment: %w", err)
	}
	res := &Result{Nodes: o.Nodes, Pods: o.Pods, scenario: ScenarioRollout}
	if _, err := waitDeployment(ctx, st, replicas, progressf, nil); err != nil {
		return res, err
	}
	res.CreateSeconds = round(time.Since(start).Seconds(), 3)
	progressf("deployment %s: %d replicas available", rolloutName, replicas)

	maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(d.Spec.Strategy.RollingUpdate.MaxUnavailable, int(replicas), false)
	if err != nil {
		return res, fmt.Errorf("sim: maxUnavailable: %w", err)
	}
	res.AvailabilityBound = int(replicas) - maxUnavailable

	pods, rev, err := st.List(podKind, store.Filter{Namespace: d.Namespace})
	if err != nil {
		return res, err
	}
	av := &availability{ready: map[string]bool{}}
	for _, p := range pods {
		av.apply(p.(*api.Pod), false)
	}
	av.min = av.count
	watchCtx, stopWatch := context.WithCancel(ctx)
	var wg sync.WaitGroup
	watchErr := make(chan error, 1)
	w, err := st.Watch(watchCtx, store.WatchOptions{Kind: podKind, Revision: rev})
	if err != nil {
		stopWatch()
		return res, fmt.Errorf("sim: watch pods: %w", err)
	}
	wg.Go(func() { watchErr <- av.follow(watchCtx, w) })
	stopFollowing := func() error {
		stopWatch()
		wg.Wait()
		w.Stop()
		if err := <-watchErr; err != nil && watchCtx.Err() == nil {
			return err
		}
		return nil
	}

	start = time.Now()
	if err := setImage(ctx, st, "web:2.0"); err != nil {
		_ = stopFollowing()
		return res, err
	}
	minStatus, err := waitDeployment(ctx, st, replicas, progressf, av)
	res.RolloutSeconds = round(time.Since(start).Seconds(), 3)
	if ferr := stopFollowing(); ferr != nil && err == nil {
		err = fmt.Errorf("sim: follow pods: %w", ferr)
	}
	av.mu.Lock()
	res.MinAvailable = ptr(min(av.min, av.count))
	res.AvailabilityRevisions = av.revisions
	av.mu.Unlock()
	res.MinStatusAvailable = ptr(minStatus)
	return res, err
}

// makeDeployment is the Deployment of the rollout scenario, its pods
// shaped as the ReplicaSets' (defaults: maxSurge and maxUnavailable 25%).
func makeDeployment(replicas int32, o *Options) *api.Deployment {
	labels := map[string]string{"app": rolloutName}
	tmpl := makePod(0, metav1.OwnerReference{Name: rolloutName}, o)
	d := &api.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: rolloutName},
		Spec: api.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: api.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec},
		},
	}
	api.Default(d)
	return d
}

// setImage changes the image of the Deployment's container: a rollout.
func setImage(ctx context.Context, st *store.Store, image string) error {
	_, err := st.Txn(ctx, func(tx *store.Txn) error {
		obj, err := tx.Get(deploymentKind, "default", rolloutName)
		if err != nil {
			return err
		}
		d := obj.DeepCopyObject().(*api.Deployment)
		d.Spec.Template.Spec.Containers[0].Image = image
		_, err = tx.Update(d)
		return err
	})
	if err != nil {
		return fmt.Errorf("sim: update deployment: %w", err)
	}
	return nil
}

// waitDeployment polls the Deployment until its rollout is complete:
// observed, every replica updated and available, no old one left. It
// returns the least status.availableReplicas it saw.
func waitDeployment(ctx context.Context, st *store.Store, replicas int32, progressf func(string, ...any), av *availability) (int, error) {
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	lastProgress := time.Now()
	minStatus := int(replicas)
	for {
		obj, err := st.Get(deploymentKind, "default", rolloutName)
		if err != nil {
			return minStatus, fmt.Errorf("sim: get deployment: %w", err)
		}
		d := obj.(*api.Deployment)
		s := d.Status
		if s.ObservedGeneration >= d.Generation {
			minStatus = min(minStatus, int(s.AvailableReplicas))
		}
		if s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == replicas && s.Replicas == replicas && s.AvailableReplicas == replicas {
			return minStatus, nil
		}
		if time.Since(lastProgress) >= time.Second {
			lastProgress = time.Now()
			line := fmt.Sprintf("deployment %s: replicas %d updated %d available %d", rolloutName, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas)
			if av != nil {
				av.mu.Lock()
				line += fmt.Sprintf(" (pods available %d, least %d)", av.count, min(av.min, av.count))
				av.mu.Unlock()
			}
			progressf("%s", line)
		}
		select {
		case <-ctx.Done():
			return minStatus, fmt.Errorf("sim: deployment rollout: %w", ctx.Err())
		case <-poll.C:
		}
	}
}

// availability counts the available pods as the watch shows them, and
// the least count at the end of any revision.
type availability struct {
	mu        sync.Mutex
	ready     map[string]bool
	count     int
	min       int
	rev       uint64
	revisions int
}

func podAvailable(p *api.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase == api.PodRunning && p.Ready()
}

// apply notes one pod's state (gone when deleted).
func (av *availability) apply(p *api.Pod, deleted bool) {
	key := p.Namespace + "/" + p.Name
	now := !deleted && podAvailable(p)
	if was := av.ready[key]; was != now {
		if now {
			av.count++
		} else {
			av.count--
		}
	}
	if now {
		av.ready[key] = true
	} else {
		delete(av.ready, key)
	}
}

// follow applies the watch's events until ctx ends; the count a revision
// leaves is compared with the least once the next revision begins, so a
// transaction that replaces pods is judged whole.
func (av *availability) follow(ctx context.Context, w *store.Watcher) error {
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			return err
		}
		p, ok := ev.Object.(*api.Pod)
		if !ok {
			continue
		}
		av.mu.Lock()
		if ev.Revision != av.rev {
			av.min = min(av.min, av.count)
			av.rev = ev.Revision
			av.revisions++
		}
		av.apply(p, ev.Type == store.Deleted)
		av.mu.Unlock()
	}
}
