package main

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/client"
)

// connectAPI builds the client of the control plane that the kubeconfig
// names (kubeconfigFiles: the flag, $BERTH_KUBECONFIG, $KUBECONFIG, the
// server's admin.kubeconfig, ~/.kube/config), or --server, bounded by
// --request-timeout. It is a variable so that tests of the commands'
// argument handling can put a fake in its place.
var connectAPI = func(g *globalOptions) (apiClient, error) {
	cfg, err := loadKubeconfig(g.kubeconfigFiles())
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "berth/" + version
	if g.server != "" {
		cfg.Server = g.server
	}
	cfg.Timeout = g.requestTimeout.client()
	c, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	return &clientAPI{c: c, cfg: cfg}, nil
}

// clientAPI is apiClient over client.Client. It passes the kind and
// namespace where the client reads them from the object; the client's
// errors are apimachinery's Status errors, which the commands read.
type clientAPI struct {
	c *client.Client
	// cfg is what c was made from: exec speaks WebSocket, through
	// Kubernetes' own client, which takes the server and credentials.
	cfg *client.Config
}

func (a *clientAPI) Get(ctx context.Context, k *api.Kind, ns, name string) (api.Object, error) {
	return a.c.Get(ctx, k, ns, name)
}

func (a *clientAPI) List(ctx context.Context, k *api.Kind, ns string, opts listOptions) ([]api.Object, string, error) {
	return a.c.List(ctx, k, ns, client.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector})
}

func (a *clientAPI) Table(ctx context.Context, k *api.Kind, ns, name string, opts listOptions) (*metav1.Table, error) {
	return a.c.Table(ctx, k, ns, name, client.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector})
}

func (a *clientAPI) Watch(ctx context.Context, k *api.Kind, ns string, opts listOptions) (watcher, error) {
	w, err := a.c.Watch(ctx, k, ns, client.WatchOptions{
		ListOptions:     client.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector},
		ResourceVersion: opts.ResourceVersion,
	})
	if err != nil {
		return nil, err
	}
	return clientWatcher{w}, nil
}

// inNamespace puts an object in ns, as the command decided, before the
// client reads the namespace from it.
func inNamespace(k *api.Kind, ns string, obj api.Object) api.Object {
	if !k.Namespaced || ns == "" || obj.GetNamespace() == ns {
		return obj
	}
	obj = obj.DeepCopyObject().(api.Object)
	obj.SetNamespace(ns)
	return obj
}

func (a *clientAPI) Create(ctx context.Context, k *api.Kind, ns string, obj api.Object) (api.Object, error) {
	return a.c.CreateAs(ctx, k, inNamespace(k, ns, obj))
}

func (a *clientAPI) Update(ctx context.Context, k *api.Kind, ns string, obj api.Object) (api.Object, error) {
	return a.c.UpdateAs(ctx, k, inNamespace(k, ns, obj))
}

func (a *clientAPI) Patch(ctx context.Context, k *api.Kind, ns, name string, patch []byte) (api.Object, error) {
	return a.c.Patch(ctx, k, ns, name, patch)
}

func (a *clientAPI) Delete(ctx context.Context, k *api.Kind, ns, name string, opts deleteOptions) error {
	o := &metav1.DeleteOptions{GracePeriodSeconds: opts.GracePeriodSeconds}
	if opts.PropagationPolicy != "" {
		p := metav1.DeletionPropagation(opts.PropagationPolicy)
		o.PropagationPolicy = &p
	}
	_, err := a.c.Delete(ctx, k, ns, name, o)
	return err
}

// clientWatcher is watcher over client.Watcher.
type clientWatcher struct {
	w *client.Watcher
}

func (cw clientWatcher) Next(ctx context.Context) (watchEvent, error) {
	ev, err := cw.w.Next(ctx)
	switch {
	case errors.Is(err, client.ErrWatchClosed):
		return watchEvent{}, errWatchClosed
	case err != nil:
		return watchEvent{}, err
	}
	return watchEvent{Type: string(ev.Type), Object: ev.Object}, nil
}

func (cw clientWatcher) Stop() { cw.w.Stop() }

func (a *clientAPI) ServerGroups(ctx context.Context) (*metav1.APIGroupList, error) {
	return a.c.ServerGroups(ctx)
}

func (a *clientAPI) ServerResources(ctx context.Context, gv schema.GroupVersion) (*metav1.APIResourceList, error) {
	return a.c.ServerResources(ctx, gv)
}
