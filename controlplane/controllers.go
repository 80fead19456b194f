package controlplane

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/clusterroleaggregation"
	"github.com/berth-dev/berth/reconcile/cronjob"
	"github.com/berth-dev/berth/reconcile/daemonset"
	"github.com/berth-dev/berth/reconcile/disruption"
	"github.com/berth-dev/berth/reconcile/endpoints"
	"github.com/berth-dev/berth/reconcile/endpointslice"
	"github.com/berth-dev/berth/reconcile/event"
	"github.com/berth-dev/berth/reconcile/gc"
	"github.com/berth-dev/berth/reconcile/hpa"
	ingressctl "github.com/berth-dev/berth/reconcile/ingress"
	"github.com/berth-dev/berth/reconcile/job"
	"github.com/berth-dev/berth/reconcile/namespace"
	"github.com/berth-dev/berth/reconcile/node"
	"github.com/berth-dev/berth/reconcile/nodeipam"
	"github.com/berth-dev/berth/reconcile/podgc"
	"github.com/berth-dev/berth/reconcile/quota"
	"github.com/berth-dev/berth/reconcile/serviceaccount"
	"github.com/berth-dev/berth/reconcile/servicelb"
	"github.com/berth-dev/berth/reconcile/statefulset"
	"github.com/berth-dev/berth/reconcile/volume"
	"github.com/berth-dev/berth/reconcile/workload"
	"github.com/berth-dev/berth/sched"
	"github.com/berth-dev/berth/store"
	"github.com/berth-dev/berth/store/informer"
)

// Deps is what every controller is built from, one value rather than a
// store, a clock and a logger threaded through each constructor.
type Deps struct {
	Config    Config
	Store     *store.Store
	Informers *informer.Factory
	Clock     clock.WithTickerAndDelayedExecution
	Log       *slog.Logger
	Events    *event.Writer
	// Scheduler is told when volumes change, so that pods waiting for
	// one are tried again.
	Scheduler *sched.Scheduler
	// Sources fetches and applies the Source objects.
	Sources *sources
	// IngressAddresses are the addresses the Ingress proxy is served
	// on, for the status of the Ingresses it serves.
	IngressAddresses func() []string
	// Metrics is the pods' resource usage, as metrics.k8s.io serves it,
	// for the HorizontalPodAutoscaler controller.
	Metrics hpa.MetricsSource
}

// Recorder records the events of a component (as kube-controller-manager's
// controllers do under their own names).
func (d Deps) Recorder(component string) *event.Recorder { return d.Events.Recorder(component, "") }

// InitFunc builds one controller from the control plane's dependencies;
// nil, nil when the configuration leaves it off.
type InitFunc func(ctx context.Context, d Deps) (*reconcile.Controller, error)

// namedInit is one row of the controller table.
type namedInit struct {
	name string
	init InitFunc
}

// controllerInits is every controller the leader runs, by the name it
// logs under, as kube-controller-manager's table of InitFuncs: a new
// controller is one row.
var controllerInits = []namedInit{
	{SourceControllerName, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		if d.Sources == nil {
			return nil, nil
		}
		return d.Sources.controller(d), nil
	}},
	{DriftControllerName, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		if d.Sources == nil {
			return nil, nil
		}
		return d.Sources.driftController(d), nil
	}},
	{endpoints.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return endpoints.NewController(d.Store, endpoints.Options{Clock: d.Clock, Logger: d.Log}), nil
	}},
	{endpointslice.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return endpointslice.NewController(d.Store, endpointslice.Options{Clock: d.Clock, Logger: d.Log}), nil
	}},
	{servicelb.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return servicelb.NewController(d.Store, servicelb.Options{Clock: d.Clock, Logger: d.Log}), nil
	}},
	{ingressctl.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		if d.Config.Ingress == nil {
			return nil, nil
		}
		return ingressctl.NewController(d.Store, ingressctl.Options{Addresses: d.IngressAddresses, Clock: d.Clock, Logger: d.Log,
			Events: d.Recorder(ingressctl.EventComponent)}), nil
	}},
	{workload.ReplicaSetName, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return workload.NewReplicaSetController(d.Store, workload.Options{Clock: d.Clock, Logger: d.Log,
			Events: d.Recorder("replicaset-controller")}), nil
	}},
	{workload.ReplicationControllerName, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return workload.NewReplicationControllerController(d.Store, workload.Options{Clock: d.Clock, Logger: d.Log,
			Events: d.Recorder("replication-controller")}), nil
	}},
	{workload.DeploymentName, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return workload.NewDeploymentController(d.Store, workload.Options{Clock: d.Clock, Logger: d.Log,
			Events: d.Recorder("deployment-controller")}), nil
	}},
	{job.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return job.NewController(d.Store, job.Options{Clock: d.Clock, Logger: d.Log,
			Events: d.Recorder(job.EventComponent)}), nil
	}},
	{cronjob.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return cronjob.NewController(d.Store, cronjob.Options{Clock: d.Clock, Logger: d.Log,
			Events: d.Recorder(cronjob.EventComponent)}), nil
	}},
	{statefulset.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return statefulset.NewController(d.Store, statefulset.Options{Clock: d.Clock, Logger: d.Log,
			Events: d.Recorder(statefulset.EventComponent)}), nil
	}},
	{daemonset.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return daemonset.NewController(d.Store, daemonset.Options{Clock: d.Clock, Logger: d.Log,
			Events: d.Recorder(daemonset.EventComponent)}), nil
	}},
	{hpa.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return hpa.NewController(d.Store, hpa.Options{Clock: d.Clock, Logger: d.Log, Metrics: d.Metrics,
			Events: d.Recorder(hpa.EventComponent)}), nil
	}},
	{event.TTLName, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return event.NewTTLController(d.Store, event.TTLOptions{TTL: d.Config.EventTTL, Clock: d.Clock, Logger: d.Log}), nil
	}},
	{gc.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return gc.NewController(d.Store, gc.Options{Clock: d.Clock, Logger: d.Log}), nil
	}},
	{namespace.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return namespace.NewController(d.Store, namespace.Options{Clock: d.Clock, Logger: d.Log}), nil
	}},
	{serviceaccount.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return serviceaccount.NewController(d.Store, serviceaccount.Options{Clock: d.Clock, Logger: d.Log}), nil
	}},
	{quota.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return quota.NewController(d.Store, quota.Options{Clock: d.Clock, Logger: d.Log}), nil
	}},
	{disruption.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return disruption.NewController(d.Store, disruption.Options{Clock: d.Clock, Logger: d.Log,
			Events: d.Recorder(disruption.EventComponent)}), nil
	}},
	{node.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return node.NewController(d.Store, node.Options{MonitorPeriod: d.Config.NodeMonitorPeriod,
			GracePeriod: d.Config.NodeMonitorGracePeriod, EvictionTimeout: d.Config.PodEvictionTimeout,
			Clock: d.Clock, Logger: d.Log, Events: d.Recorder(node.EventComponent)}), nil
	}},
	{podgc.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return podgc.NewController(d.Store, podgc.Options{Threshold: d.Config.TerminatedPodGCThreshold, Clock: d.Clock, Logger: d.Log}), nil
	}},
	{nodeipam.Name, initNodeIPAM},
	{volume.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return volume.NewController(d.Store, volume.Options{Clock: d.Clock, Logger: d.Log,
			Events: d.Recorder(volume.EventComponent), VolumesChanged: d.Scheduler.VolumesChanged}), nil
	}},
	{clusterroleaggregation.Name, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return clusterroleaggregation.NewController(d.Store, clusterroleaggregation.Options{Clock: d.Clock, Logger: d.Log}), nil
	}},
	{volume.ProtectionName, func(_ context.Context, d Deps) (*reconcile.Controller, error) {
		return volume.NewProtectionController(d.Store, volume.Options{Clock: d.Clock, Logger: d.Log}), nil
	}},
}

// buildControllers runs every row of the table, in order; each
// controller is fed by the shared informers.
func buildControllers(ctx context.Context, inits []namedInit, d Deps) ([]*reconcile.Controller, error) {
	var cs []*reconcile.Controller
	for _, row := range inits {
		c, err := row.init(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("controller %s: %w", row.name, err)
		}
		if c == nil {
			continue
		}
		c.ShareInformers(d.Informers)
		cs = append(cs, c)
	}
	return cs, nil
}

// cleanups undo, newest first, what New has opened when a later step
// fails.
type cleanups []func()

func (c *cleanups) push(f func()) { *c = append(*c, f) }

func (c cleanups) run() {
	for i := len(c) - 1; i >= 0; i-- {
		c[i]()
	}
}
