package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// CostBudget is the CEL cost one binding's evaluation of a request may
// spend, Kubernetes' (about a second); a single expression may spend a
// tenth of it. An expression that runs past either is cut off, and its
// policy's failurePolicy decides.
const CostBudget = celconfig.RuntimeCELCostBudget

var (
	policyKind  = api.KindOf(&api.ValidatingAdmissionPolicy{})
	bindingKind = api.KindOf(&api.ValidatingAdmissionPolicyBinding{})
)

// envSet is the CEL environment of policies, with Kubernetes' libraries
// and strict cost.
var envSet = sync.OnceValue(func() *environment.EnvSet {
	return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
})

// Policies evaluates the stored ValidatingAdmissionPolicies through their
// bindings, with k8s.io/apiserver's CEL validator.
type Policies struct {
	rd  Reader
	log *slog.Logger

	mu sync.Mutex
	// compiled keeps each policy's validator while the policy is the same.
	compiled map[string]compiledPolicy
}

type compiledPolicy struct {
	resourceVersion string
	validator       validating.Validator
}

// NewPolicies returns the policy evaluator over rd.
func NewPolicies(rd Reader, log *slog.Logger) *Policies {
	if log == nil {
		log = slog.Default()
	}
	return &Policies{rd: rd, log: log, compiled: map[string]compiledPolicy{}}
}

// compile builds a policy's validator, as Kubernetes' plugin does: its
// variables, validations, message expressions, audit annotations and
// match conditions in one composited environment.
func compile(p *api.ValidatingAdmissionPolicy) validating.Validator {
	hasParams := p.Spec.ParamKind != nil
	vars := cel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	msgVars := cel.OptionalVariableDeclarations{HasParams: hasParams}
	fp := p.Spec.FailurePolicy
	c, err := cel.NewCompositedCompiler(envSet())
	if err != nil {
		return validating.NewValidator(nil, nil, nil, nil, fp, err)
	}
	variables := make([]cel.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		variables[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	c.CompileAndStoreVariables(variables, vars, environment.StoredExpressions)
	validations := make([]cel.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]cel.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	audits := make([]cel.ExpressionAccessor, len(p.Spec.AuditAnnotations))
	for i, a := range p.Spec.AuditAnnotations {
		audits[i] = &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	var matcher matchconditions.Matcher
	if len(p.Spec.MatchConditions) > 0 {
		conds := make([]cel.ExpressionAccessor, len(p.Spec.MatchConditions))
		for i := range p.Spec.MatchConditions {
			conds[i] = (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i])
		}
		matcher = matchconditions.NewMatcher(c.CompileCondition(conds, vars, environment.StoredExpressions), fp, "policy", "validate", p.Name)
	}
	return validating.NewValidator(
		c.CompileCondition(validations, vars, environment.StoredExpressions),
		matcher,
		c.CompileCondition(audits, vars, environment.StoredExpressions),
		c.CompileCondition(messages, msgVars, environment.StoredExpressions),
		fp, nil)
}

// CheckPolicy compiles each expression of a policy, as Kubernetes does
// when one is written, and names every one that does not compile.
func CheckPolicy(p *api.ValidatingAdmissionPolicy) field.ErrorList {
	var errs field.ErrorList
	c, err := cel.NewCompositedCompiler(envSet())
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	vars := cel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	check := func(path *field.Path, expr string, acc cel.ExpressionAccessor) {
		if expr == "" {
			return
		}
		for _, e := range c.CompileCondition([]cel.ExpressionAccessor{acc}, vars, environment.StoredExpressions).CompilationErrors() {
			errs = append(errs, field.Invalid(path, expr, e.Error()))
		}
	}
	sp := field.NewPath("spec")
	variables := make([]cel.NamedExpressionAccessor, 0, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		acc := &validating.Variable{Name: v.Name, Expression: v.Expression}
		check(sp.Child("variables").Index(i).Child("expression"), v.Expression, acc)
		variables = append(variables, acc)
	}
	c.CompileAndStoreVariables(variables, vars, environment.StoredExpressions)
	for i, v := range p.Spec.Validations {
		vp := sp.Child("validations").Index(i)
		check(vp.Child("expression"), v.Expression, &validating.ValidationCondition{Expression: v.Expression})
		check(vp.Child("messageExpression"), v.MessageExpression, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression})
	}
	for i, a := range p.Spec.AuditAnnotations {
		check(sp.Child("auditAnnotations").Index(i).Child("valueExpression"), a.ValueExpression, &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression})
	}
	for i := range p.Spec.MatchConditions {
		mc := &p.Spec.MatchConditions[i]
		check(sp.Child("matchConditions").Index(i).Child("expression"), mc.Expression, (*matchconditions.MatchCondition)(mc))
	}
	return errs
}

func (ps *Policies) validator(p *api.ValidatingAdmissionPolicy) validating.Validator {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	c, ok := ps.compiled[p.Name]
	if !ok || c.resourceVersion != p.ResourceVersion {
		c = compiledPolicy{resourceVersion: p.ResourceVersion, validator: compile(p)}
		ps.compiled[p.Name] = c
	}
	return c.validator
}

// matchResources reports whether a request is among the resources m
// selects: its rules, less its exclusions, and its selectors.
func (r *Request) matchResources(rd Reader, m *admissionregistrationv1.MatchResources) (string, bool, error) {
	if m == nil {
		return r.gvk().Version, true, nil
	}
	named := func(rules []admissionregistrationv1.NamedRuleWithOperations) (string, bool) {
		for _, nr := range rules {
			if len(nr.ResourceNames) > 0 && !slices.Contains(nr.ResourceNames, r.Name) {
				continue
			}
			if v, ok := r.matchingVersion([]admissionregistrationv1.RuleWithOperations{nr.RuleWithOperations}, m.MatchPolicy); ok {
				return v, true
			}
		}
		return "", false
	}
	if _, excluded := named(m.ExcludeResourceRules); excluded {
		return "", false, nil
	}
	v := r.gvk().Version
	if len(m.ResourceRules) > 0 {
		var ok bool
		if v, ok = named(m.ResourceRules); !ok {
			return "", false, nil
		}
	}
	ok, err := r.selects(rd, m.NamespaceSelector, m.ObjectSelector)
	return v, ok, err
}

// Validate evaluates a request against every policy a binding applies to
// it. A failed validation of a Deny binding refuses the request in
// Kubernetes' words, with the validation's reason (422 by default); of a
// Warn binding, it becomes a warning; of an Audit binding, a log line.
func (ps *Policies) Validate(ctx context.Context, req *Request) ([]string, error) {
	if req.exempt() {
		return nil, nil
	}
	bindings, _, err := ps.rd.List(bindingKind, storeAll)
	if err != nil || len(bindings) == 0 {
		return nil, err
	}
	var warnings []string
	var denied error
	for _, o := range bindings {
		b := o.(*api.ValidatingAdmissionPolicyBinding)
		po, err := ps.rd.Get(policyKind, "", b.Spec.PolicyName)
		if store.IsNotFound(err) {
			continue // a binding of no policy does nothing, as in Kubernetes
		}
		if err != nil {
			return warnings, err
		}
		p := po.(*api.ValidatingAdmissionPolicy)
		v, ok, err := req.matchResources(ps.rd, p.Spec.MatchConstraints)
		if err != nil {
			return warnings, err
		}
		if !ok || p.Spec.MatchConstraints == nil {
			continue
		}
		if b.Spec.MatchResources != nil {
			if _, ok, err = req.matchResources(ps.rd, b.Spec.MatchResources); err != nil || !ok {
				if err != nil {
					return warnings, err
				}
				continue
			}
		}
		decisions, err := ps.evaluate(ctx, req, v, p, b)
		if err != nil {
			if failClosed(p.Spec.FailurePolicy) {
				return warnings, policyDenied(req, p, b, validating.PolicyDecision{Message: err.Error(), Reason: metav1.StatusReasonInvalid})
			}
			ps.log.Warn("validating admission policy failed, failing open", "policy", p.Name, "binding", b.Name, "err", err)
			continue
		}
		for _, d := range decisions {
			if d.Action != validating.ActionDeny {
				continue
			}
			for _, action := range b.Spec.ValidationActions {
				switch action {
				case admissionregistrationv1.Deny:
					if denied == nil {
						denied = policyDenied(req, p, b, d)
					}
				case admissionregistrationv1.Warn:
					warnings = append(warnings, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", p.Name, b.Name, d.Message))
				case admissionregistrationv1.Audit:
					ps.log.Info("validating admission policy failed (audit)", "policy", p.Name, "binding", b.Name,
						"resource", req.Kind.Resource, "namespace", req.Namespace, "name", req.Name, "message", d.Message)
				}
			}
		}
	}
	return warnings, denied
}

func failClosed(fp *admissionregistrationv1.FailurePolicyType) bool {
	return fp == nil || *fp == admissionregistrationv1.Fail
}

// errNoParams is a binding whose paramRef finds nothing, under
// parameterNotFoundAction Deny.
var errNoParams = errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")

// evaluate runs a policy for one binding: once per parameter object its
// paramRef finds, or once without parameters.
func (ps *Policies) evaluate(ctx context.Context, req *Request, version string, p *api.ValidatingAdmissionPolicy, b *api.ValidatingAdmissionPolicyBinding) ([]validating.PolicyDecision, error) {
	params, err := ps.params(req, p, b)
	if err != nil {
		return nil, err
	}
	attrs := req.versioned(version)
	var ns *corev1.Namespace
	if req.Namespace != "" && req.Kind != namespaceKind {
		if o, err := ps.rd.Get(namespaceKind, "", req.Namespace); err == nil {
			ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.GetName(), Labels: o.GetLabels(), Annotations: o.GetAnnotations(), UID: o.GetUID()}}
		}
	}
	gvr := attrs.GetResource()
	var out []validating.PolicyDecision
	for _, param := range params {
		res := ps.validator(p).Validate(ctx, gvr, attrs, param, ns, CostBudget, nil)
		out = append(out, res.Decisions...)
	}
	return out, nil
}

// params finds the parameter objects of a binding: none needed (one nil),
// the object paramRef names, or those its selector picks; in the
// request's namespace for a namespaced kind unless paramRef names one.
func (ps *Policies) params(req *Request, p *api.ValidatingAdmissionPolicy, b *api.ValidatingAdmissionPolicyBinding) ([]runtime.Object, error) {
	pk, ref := p.Spec.ParamKind, b.Spec.ParamRef
	if pk == nil {
		return []runtime.Object{nil}, nil
	}
	if ref == nil {
		return nil, fmt.Errorf("ValidatingAdmissionPolicy '%s' has a paramKind, but its binding '%s' has no paramRef", p.Name, b.Name)
	}
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("paramKind: %w", err)
	}
	k, ok := api.KindFor(gv.WithKind(pk.Kind))
	if !ok {
		return nil, fmt.Errorf("paramKind %s %s is not served", pk.APIVersion, pk.Kind)
	}
	ns := ref.Namespace
	if k.Namespaced && ns == "" {
		ns = req.Namespace
	}
	var found []api.Object
	if ref.Name != "" {
		o, err := ps.rd.Get(k, ns, ref.Name)
		if err != nil && !store.IsNotFound(err) {
			return nil, err
		}
		if err == nil {
			found = append(found, o)
		}
	} else {
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return nil, fmt.Errorf("paramRef.selector: %w", err)
		}
		objs, _, err := ps.rd.List(k, store.Filter{Namespace: ns, Labels: sel})
		if err != nil {
			return nil, err
		}
		found = objs
	}
	if len(found) == 0 {
		if a := ref.ParameterNotFoundAction; a != nil && *a == admissionregistrationv1.AllowAction {
			return nil, nil
		}
		return nil, errNoParams
	}
	out := make([]runtime.Object, len(found))
	for i, o := range found {
		out[i] = inVersion(o, k.GVK)
	}
	return out, nil
}

// policyDenied is the refusal of a Deny binding, in Kubernetes' words:
// a 403's message and details with the validation's reason and code.
func policyDenied(req *Request, p *api.ValidatingAdmissionPolicy, b *api.ValidatingAdmissionPolicyBinding, d validating.PolicyDecision) error {
	msg := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", p.Name, b.Name, d.Message)
	a := req.attributes(req.gvk().Version, false)
	err := apierrors.NewForbidden(a.GetResource().GroupResource(), req.Name, errors.New(msg))
	reason := d.Reason
	if reason == "" {
		reason = metav1.StatusReasonInvalid
	}
	err.ErrStatus.Reason = reason
	err.ErrStatus.Code = reasonCode(reason)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Message: msg})
	return err
}

func reasonCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonForbidden:
		return 403
	case metav1.StatusReasonUnauthorized:
		return 401
	case metav1.StatusReasonRequestEntityTooLarge:
		return 413
	}
	return 422
}
