package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	"k8s.io/apiserver/pkg/cel/environment"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"

	"github.com/berth-dev/berth/api"
)

// defaultTimeout is a webhook's timeout when its configuration names none
// (the API defaults timeoutSeconds to 10, so only a configuration written
// around defaulting lacks one).
const defaultTimeout = 10 * time.Second

var (
	validatingKind = api.KindOf(&api.ValidatingWebhookConfiguration{})
	mutatingKind   = api.KindOf(&api.MutatingWebhookConfiguration{})
)

// Webhooks calls the webhooks of the stored webhook configurations.
type Webhooks struct {
	rd      Reader
	clients *webhookutil.ClientManager
	log     *slog.Logger
	// conditions compiles matchConditions, once per webhook.
	conditions cel.ConditionCompiler

	mu sync.Mutex
	// accessors keeps each configuration's webhooks, with their compiled
	// conditions and clients, while the configuration is the same.
	accessors map[string]configHooks
}

// configHooks are the webhooks of one version of a configuration.
type configHooks struct {
	resourceVersion string
	hooks           []webhook.WebhookAccessor
}

// NewWebhooks returns the webhook caller over rd, which a service's
// webhook is also resolved through, to one of its ready endpoints.
func NewWebhooks(rd Reader, log *slog.Logger) (*Webhooks, error) {
	cm, err := webhookutil.NewClientManager([]schema.GroupVersion{admissionv1.SchemeGroupVersion}, admissionv1.AddToScheme)
	if err != nil {
		return nil, fmt.Errorf("admission webhooks: %w", err)
	}
	auth, err := webhookutil.NewDefaultAuthenticationInfoResolver("")
	if err != nil {
		return nil, fmt.Errorf("admission webhooks: %w", err)
	}
	cm.SetAuthenticationInfoResolver(auth)
	cm.SetServiceResolver(endpointResolver{rd})
	if err := cm.Validate(); err != nil {
		return nil, fmt.Errorf("admission webhooks: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	compiler := cel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	return &Webhooks{rd: rd, clients: &cm, log: log, conditions: compiler, accessors: map[string]configHooks{}}, nil
}

// Decode turns an object a mutating webhook patched, as JSON, back into
// the object of the request's kind.
type Decode func(data []byte) (api.Object, error)

// invocation is one webhook a request is to be sent to, in the version
// of the kind its rules matched.
type invocation struct {
	hook         webhook.WebhookAccessor
	version      string
	reinvocation bool
}

// matches returns the version of req a webhook is called with, and false
// when its rules, selectors or dry-run support leave it out.
func (w *Webhooks) matches(ctx context.Context, req *Request, h webhook.WebhookAccessor) (string, bool, error) {
	v, ok := req.matchingVersion(h.GetRules(), h.GetMatchPolicy())
	if !ok {
		return "", false, nil
	}
	ok, err := req.selects(w.rd, h.GetNamespaceSelector(), h.GetObjectSelector())
	if err != nil || !ok {
		return "", false, err
	}
	if len(h.GetMatchConditions()) > 0 {
		res := h.GetCompiledMatcher(w.conditions).Match(ctx, req.versioned(v), nil, nil)
		if res.Error != nil {
			// A condition that cannot be evaluated is a call that failed.
			return "", false, w.callFailed(h, &webhookutil.ErrCallingWebhook{WebhookName: h.GetName(),
				Reason: fmt.Errorf("failed to evaluate matchCondition %q: %w", res.FailedConditionName, res.Error)})
		}
		if !res.Matches {
			return "", false, nil
		}
	}
	if req.DryRun {
		if se := h.GetSideEffects(); se == nil || (*se != admissionregistrationv1.SideEffectClassNone && *se != admissionregistrationv1.SideEffectClassNoneOnDryRun) {
			return "", false, webhookerrors.NewDryRunUnsupportedErr(h.GetName())
		}
	}
	return v, true, nil
}

// mutatingHooks are the webhooks of the MutatingWebhookConfigurations, in
// the order Kubernetes calls them: by configuration name, then as listed.
func (w *Webhooks) mutatingHooks() ([]webhook.WebhookAccessor, error) {
	return w.hooksOf(mutatingKind, func(o api.Object) []webhook.WebhookAccessor {
		c := o.(*api.MutatingWebhookConfiguration)
		hooks := make([]webhook.WebhookAccessor, len(c.Webhooks))
		for i := range c.Webhooks {
			hooks[i] = webhook.NewMutatingWebhookAccessor(hookUID(c.Name, c.Webhooks[i].Name, i), c.Name, &c.Webhooks[i])
		}
		return hooks
	})
}

func (w *Webhooks) validatingHooks() ([]webhook.WebhookAccessor, error) {
	return w.hooksOf(validatingKind, func(o api.Object) []webhook.WebhookAccessor {
		c := o.(*api.ValidatingWebhookConfiguration)
		hooks := make([]webhook.WebhookAccessor, len(c.Webhooks))
		for i := range c.Webhooks {
			hooks[i] = webhook.NewValidatingWebhookAccessor(hookUID(c.Name, c.Webhooks[i].Name, i), c.Name, &c.Webhooks[i])
		}
		return hooks
	})
}

// hooksOf lists the configurations of a kind (by name, as the store
// lists them) and returns their webhooks, made anew only for a
// configuration that changed.
func (w *Webhooks) hooksOf(k *api.Kind, build func(api.Object) []webhook.WebhookAccessor) ([]webhook.WebhookAccessor, error) {
	objs, _, err := w.rd.List(k, storeAll)
	if err != nil || len(objs) == 0 {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var hooks []webhook.WebhookAccessor
	for _, o := range objs {
		key := k.GVK.Kind + "/" + o.GetName()
		c, ok := w.accessors[key]
		if !ok || c.resourceVersion != o.GetResourceVersion() {
			c = configHooks{resourceVersion: o.GetResourceVersion(), hooks: build(o)}
			w.accessors[key] = c
		}
		hooks = append(hooks, c.hooks...)
	}
	if len(w.accessors) > 4*len(objs)+64 {
		clear(w.accessors) // forget deleted configurations now and then
	}
	return hooks, nil
}

func hookUID(config, name string, i int) string { return config + "/" + name + "/" + strconv.Itoa(i) }

// Mutate sends a create, update or delete to the mutating webhooks it
// matches, one after another, each with the object as the ones before
// left it, and returns the object as the last one left it, with the
// webhooks' warnings. A webhook with reinvocationPolicy IfNeeded is
// called once more when a webhook after it changed the object. A
// webhook that cannot be called, answers badly or runs past its timeout
// fails the request under failurePolicy Fail and is passed over under
// Ignore; one that refuses fails it with its message.
func (w *Webhooks) Mutate(ctx context.Context, req *Request, decode Decode) (api.Object, []string, error) {
	if req.exempt() {
		return req.Object, nil, nil
	}
	hooks, err := w.mutatingHooks()
	if err != nil || len(hooks) == 0 {
		return req.Object, nil, err
	}
	var warnings []string
	r := *req
	// changedAt is the position of the last webhook that changed the object.
	changedAt := -1
	var ran []int
	for i, h := range hooks {
		changed, called, warns, err := w.mutateOnce(ctx, &r, h, decode)
		warnings = append(warnings, warns...)
		if err != nil {
			return nil, warnings, err
		}
		if changed {
			changedAt = i
		}
		if called {
			ran = append(ran, i)
		}
	}
	for _, i := range ran {
		p := hooks[i].(interface {
			GetMutatingWebhook() (*admissionregistrationv1.MutatingWebhook, bool)
		})
		mw, _ := p.GetMutatingWebhook()
		if mw.ReinvocationPolicy == nil || *mw.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy || changedAt <= i {
			continue
		}
		_, _, warns, err := w.mutateOnce(ctx, &r, hooks[i], decode)
		warnings = append(warnings, warns...)
		if err != nil {
			return nil, warnings, err
		}
	}
	return r.Object, warnings, nil
}

// mutateOnce calls one mutating webhook if it matches r, and applies its
// patch to r.Object.
func (w *Webhooks) mutateOnce(ctx context.Context, r *Request, h webhook.WebhookAccessor, decode Decode) (changed, called bool, warnings []string, err error) {
	if err := contextDone(ctx); err != nil {
		return false, false, nil, apierrors.NewTimeoutError(fmt.Sprintf("request did not complete within the allowed duration: %v", err), 0)
	}
	v, ok, err := w.matches(ctx, r, h)
	if err != nil || !ok {
		return false, false, nil, err
	}
	attrs, resp, err := w.call(ctx, r, h, v, true)
	if err != nil {
		return false, true, nil, w.callFailed(h, err)
	}
	if !resp.Allowed {
		return false, true, resp.Warnings, webhookerrors.ToStatusErr(h.GetName(), resp.Result)
	}
	if len(resp.Patch) == 0 || r.Object == nil {
		return false, true, resp.Warnings, nil
	}
	if resp.PatchType != admissionv1.PatchTypeJSONPatch {
		return false, true, resp.Warnings, apierrors.NewInternalError(&webhookutil.ErrCallingWebhook{WebhookName: h.GetName(),
			Reason: fmt.Errorf("unsupported patch type %q", resp.PatchType)})
	}
	obj, err := applyPatch(attrs.VersionedObject.Object(), resp.Patch, r.gvk(), decode)
	if err != nil {
		return false, true, resp.Warnings, apierrors.NewInternalError(&webhookutil.ErrCallingWebhook{WebhookName: h.GetName(),
			Reason: fmt.Errorf("the patch the webhook returned does not apply: %w", err)})
	}
	before, _ := json.Marshal(r.Object)
	after, _ := json.Marshal(obj)
	r.Object = obj
	return string(before) != string(after), true, resp.Warnings, nil
}

// applyPatch applies a webhook's JSONPatch to the object it was sent, and
// decodes the result as the request's version of the kind.
func applyPatch(sent any, patch []byte, gvk schema.GroupVersionKind, decode Decode) (api.Object, error) {
	doc, err := json.Marshal(sent)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	out, err := p.Apply(doc)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, err
	}
	m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	if out, err = json.Marshal(m); err != nil {
		return nil, err
	}
	return decode(out)
}

// Validate sends a request to the validating webhooks it matches, all at
// once, and returns their warnings and the first refusal, in the order of
// the webhooks.
func (w *Webhooks) Validate(ctx context.Context, req *Request) ([]string, error) {
	if req.exempt() {
		return nil, nil
	}
	hooks, err := w.validatingHooks()
	if err != nil || len(hooks) == 0 {
		return nil, err
	}
	type outcome struct {
		warnings []string
		err      error
	}
	outcomes := make([]outcome, len(hooks))
	var wg sync.WaitGroup
	for i, h := range hooks {
		v, ok, err := w.matches(ctx, req, h)
		if err != nil {
			outcomes[i].err = err
			continue
		}
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, resp, err := w.call(ctx, req, h, v, false)
			switch {
			case err != nil:
				outcomes[i].err = w.callFailed(h, err)
			case !resp.Allowed:
				outcomes[i] = outcome{resp.Warnings, webhookerrors.ToStatusErr(h.GetName(), resp.Result)}
			default:
				outcomes[i].warnings = resp.Warnings
			}
		}()
	}
	wg.Wait()
	var warnings []string
	var first error
	for _, o := range outcomes {
		warnings = append(warnings, o.warnings...)
		if first == nil {
			first = o.err
		}
	}
	return warnings, first
}

// callFailed answers a webhook that could not be called as its
// failurePolicy says: nil for Ignore, a 500 naming it for Fail.
func (w *Webhooks) callFailed(h webhook.WebhookAccessor, err error) error {
	var callErr *webhookutil.ErrCallingWebhook
	if !errors.As(err, &callErr) {
		return err
	}
	if fp := h.GetFailurePolicy(); fp != nil && *fp == admissionregistrationv1.Ignore {
		w.log.Warn("failed calling webhook, failing open", "webhook", h.GetName(), "err", callErr)
		return nil
	}
	w.log.Warn("failed calling webhook, failing closed", "webhook", h.GetName(), "err", callErr)
	return apierrors.NewInternalError(callErr)
}

// call sends one AdmissionReview and checks the answer; within the
// webhook's timeout, whatever the caller's context allows.
func (w *Webhooks) call(ctx context.Context, r *Request, h webhook.WebhookAccessor, version string, mutating bool) (*k8sadmission.VersionedAttributes, *request.AdmissionResponse, error) {
	attrs := r.versioned(version)
	a := attrs.Attributes
	inv := &generic.WebhookInvocation{Webhook: h, Resource: a.GetResource(), Subresource: r.Subresource, Kind: a.GetKind()}
	fail := func(format string, args ...any) error {
		return &webhookutil.ErrCallingWebhook{WebhookName: h.GetName(), Reason: fmt.Errorf(format, args...)}
	}
	uid, review, response, err := request.CreateAdmissionObjects(attrs, inv)
	if err != nil {
		return nil, nil, fail("could not create admission objects: %w", err)
	}
	client, err := h.GetRESTClient(w.clients)
	if err != nil {
		return nil, nil, fail("could not get REST client: %w", err)
	}
	timeout := defaultTimeout
	if t := h.GetTimeoutSeconds(); t != nil {
		timeout = time.Duration(*t) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := client.Post().Body(review).Timeout(timeout).Do(ctx).Into(response); err != nil {
		var status *apierrors.StatusError
		errors.As(err, &status)
		return nil, nil, &webhookutil.ErrCallingWebhook{WebhookName: h.GetName(), Reason: fmt.Errorf("failed to call webhook: %w", err), Status: status}
	}
	resp, err := request.VerifyAdmissionResponse(uid, mutating, response)
	if err != nil {
		return nil, nil, fail("received invalid webhook response: %w", err)
	}
	return attrs, resp, nil
}

// endpointResolver resolves a webhook's service to one of its ready
// endpoints, as kube-apiserver does with endpoint routing: the API server
// need not reach cluster IPs or cluster DNS.
type endpointResolver struct{ rd Reader }

func (e endpointResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	o, err := e.rd.Get(serviceKind, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("service %s/%s: %w", namespace, name, err)
	}
	svc := o.(*api.Service)
	var portName string
	found := false
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			portName, found = p.Name, true
		}
	}
	if !found {
		return nil, fmt.Errorf("service %s/%s has no port %d", namespace, name, port)
	}
	o, err = e.rd.Get(endpointsKind, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("endpoints of service %s/%s: %w", namespace, name, err)
	}
	for _, ss := range o.(*api.Endpoints).Subsets {
		for _, p := range ss.Ports {
			if p.Name != portName || len(ss.Addresses) == 0 {
				continue
			}
			return &url.URL{Scheme: "https", Host: net.JoinHostPort(ss.Addresses[0].IP, strconv.Itoa(int(p.Port)))}, nil
		}
	}
	return nil, fmt.Errorf("service %s/%s has no ready endpoint for port %d", namespace, name, port)
}
