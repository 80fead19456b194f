package api

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var namespacePhases = []NamespacePhase{NamespaceActive, NamespaceTerminating}

func validateNamespace(ns *Namespace) field.ErrorList {
	var errs field.ErrorList
	fp := field.NewPath("spec", "finalizers")
	for i, f := range ns.Spec.Finalizers {
		for _, msg := range content.IsLabelKey(string(f)) {
			errs = append(errs, field.Invalid(fp.Index(i), f, msg))
		}
	}
	if ph := ns.Status.Phase; ph != "" && !slices.Contains(namespacePhases, ph) {
		errs = append(errs, field.NotSupported(field.NewPath("status", "phase"), ph, namespacePhases))
	}
	return errs
}

func validateServiceAccount(sa *ServiceAccount) field.ErrorList {
	var errs field.ErrorList
	for i, ref := range sa.Secrets {
		errs = append(errs, validateObjectName(ref.Name, field.NewPath("secrets").Index(i).Child("name"))...)
	}
	for i, ref := range sa.ImagePullSecrets {
		errs = append(errs, validateObjectName(ref.Name, field.NewPath("imagePullSecrets").Index(i).Child("name"))...)
	}
	return errs
}

// maxConfigSize is Kubernetes' cap on the data of one ConfigMap or Secret:
// objects live in memory and in every snapshot.
const maxConfigSize = 1 << 20

// SecretTypeTLS is the Secret type of a TLS certificate and its key, which
// Kubernetes requires under TLSCertKey and TLSPrivateKey.
const (
	SecretTypeTLS SecretType = "kubernetes.io/tls"
	TLSCertKey               = "tls.crt"
	TLSPrivateKey            = "tls.key"
)

func validateSecret(s *Secret) field.ErrorList {
	var errs field.ErrorList
	size := 0
	dp := field.NewPath("data")
	for _, k := range sortedStringKeys(s.Data) {
		errs = append(errs, validateConfigKey(k, dp.Key(k))...)
		size += len(s.Data[k])
	}
	sp := field.NewPath("stringData")
	for _, k := range sortedStringKeys(s.StringData) {
		errs = append(errs, validateConfigKey(k, sp.Key(k))...)
		size += len(s.StringData[k])
	}
	if size > maxConfigSize {
		errs = append(errs, field.TooLong(dp, "", maxConfigSize))
	}
	switch s.Type {
	case "":
		errs = append(errs, field.Required(field.NewPath("type"), ""))
	case SecretTypeTLS:
		for _, k := range []string{TLSCertKey, TLSPrivateKey} {
			_, inData := s.Data[k]
			_, inString := s.StringData[k]
			if !inData && !inString {
				errs = append(errs, field.Required(dp.Key(k), "a "+string(SecretTypeTLS)+" Secret holds "+TLSCertKey+" and "+TLSPrivateKey))
			}
		}
	}
	return errs
}

func validateConfigMap(cm *ConfigMap) field.ErrorList {
	var errs field.ErrorList
	size := 0
	dp := field.NewPath("data")
	for _, k := range sortedStringKeys(cm.Data) {
		errs = append(errs, validateConfigKey(k, dp.Key(k))...)
		size += len(cm.Data[k])
	}
	bp := field.NewPath("binaryData")
	for _, k := range sortedStringKeys(cm.BinaryData) {
		errs = append(errs, validateConfigKey(k, bp.Key(k))...)
		if _, ok := cm.Data[k]; ok {
			errs = append(errs, field.Invalid(bp.Key(k), k, "duplicate of a key in data"))
		}
		size += len(cm.BinaryData[k])
	}
	if size > maxConfigSize {
		errs = append(errs, field.TooLong(dp, "", maxConfigSize))
	}
	return errs
}

// QuotaResources are what a ResourceQuota can limit (SPEC §7); cpu and
// memory are Kubernetes' short forms of requests.cpu and requests.memory.
var QuotaResources = []ResourceName{
	ResourceCPU, ResourceMemory,
	ResourceRequestsCPU, ResourceRequestsMemory, ResourceLimitsCPU, ResourceLimitsMemory,
	ResourceRequestsStorage, ResourcePods, ResourcePersistentVolumeClaims,
	ResourceServices, ResourceConfigMaps, ResourceSecrets,
}

// quotaCounts are quota resources that count objects and so are integers.
var quotaCounts = []ResourceName{ResourcePods, ResourcePersistentVolumeClaims, ResourceServices, ResourceConfigMaps, ResourceSecrets}

func validateResourceQuotaSpec(spec *ResourceQuotaSpec, p *field.Path) field.ErrorList {
	hp := p.Child("hard")
	errs := validateResourceList(spec.Hard, QuotaResources, hp)
	for _, name := range sortedResourceNames(spec.Hard) {
		q := spec.Hard[name]
		if slices.Contains(quotaCounts, name) && q.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(hp.Key(string(name)), q.String(), "must be an integer: it counts objects"))
		}
	}
	return errs
}

func validateEvent(ev *Event) field.ErrorList {
	var errs field.ErrorList
	ip := field.NewPath("involvedObject")
	if ev.InvolvedObject.Kind == "" {
		errs = append(errs, field.Required(ip.Child("kind"), ""))
	}
	if ev.InvolvedObject.Name == "" {
		errs = append(errs, field.Required(ip.Child("name"), ""))
	}
	if ev.Type != "" && ev.Type != EventTypeNormal && ev.Type != EventTypeWarning {
		errs = append(errs, field.NotSupported(field.NewPath("type"), ev.Type, []string{EventTypeNormal, EventTypeWarning}))
	}
	if ev.Count < 0 {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(ev.Count), field.NewPath("count"))...)
	}
	return errs
}

// validateLeaseSpec checks what Kubernetes checks of a Lease: a duration
// that is positive and a count of transitions that is not negative.
func validateLeaseSpec(spec *LeaseSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(path.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if n := spec.LeaseTransitions; n != nil && *n < 0 {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*n), path.Child("leaseTransitions"))...)
	}
	return errs
}

// sourceTypes are the kinds of Source objects; SourceTypeAPI names an
// owner, never a Source.
var sourceTypes = []SourceType{SourceTypeGit, SourceTypeDir, SourceTypeHTTP, SourceTypeHelm}

// gitSchemes are the URL schemes go-git can fetch from, with or without
// the "git+" prefix the --source flag uses.
var gitSchemes = []string{"https", "http", "ssh", "git", "file"}

func validateSourceSpec(spec *SourceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	up := p.Child("url")
	switch spec.Type {
	case SourceTypeGit:
		errs = append(errs, validateGitURL(spec.URL, up)...)
		if spec.Path != "" {
			errs = append(errs, validateRelativePath(spec.Path, p.Child("path"))...)
		}
	case SourceTypeHTTP:
		errs = append(errs, validateHTTPURL(spec.URL, up)...)
	case SourceTypeHelm:
		errs = append(errs, validateHTTPURL(spec.URL, up)...)
		if spec.Helm == nil || spec.Helm.Chart == "" {
			errs = append(errs, field.Required(p.Child("helm", "chart"), "the chart's name in the chart repository"))
		}
	case SourceTypeDir:
		if spec.URL == "" {
			errs = append(errs, field.Required(up, "the directory to read"))
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, sourceTypes))
	}
	if spec.Type != SourceTypeGit {
		if spec.Ref != "" {
			errs = append(errs, field.Forbidden(p.Child("ref"), "only git sources have a ref"))
		}
		if spec.Path != "" {
			errs = append(errs, field.Forbidden(p.Child("path"), "only git sources have a path"))
		}
	}
	if iv := spec.Interval; iv != nil && iv.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("interval"), iv.Duration.String(), "must be greater than zero"))
	}
	if t := spec.Timeout; t != nil && t.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("timeout"), t.Duration.String(), "must be greater than zero"))
	}
	if r := spec.SecretRef; r != nil {
		rp := p.Child("secretRef")
		errs = append(errs, validateSecretRef(r, "the Secret holding the credentials", rp)...)
		if spec.Type != SourceTypeGit {
			errs = append(errs, field.Forbidden(rp, "only git sources take credentials from a Secret"))
		}
	}
	if spec.Gate != "" && spec.Gate != SourceGatePlan {
		errs = append(errs, field.NotSupported(p.Child("gate"), spec.Gate, []SourceGate{SourceGatePlan}))
	}
	if d := spec.Decryption; d != nil {
		dp := p.Child("decryption")
		if d.Provider != "" && d.Provider != "sops" {
			errs = append(errs, field.NotSupported(dp.Child("provider"), d.Provider, []string{"sops"}))
		}
		if d.SecretRef.Name == "" {
			errs = append(errs, field.Required(dp.Child("secretRef", "name"), "the Secret holding the age identities"))
		}
	}
	if h := spec.Helm; h != nil {
		errs = append(errs, validateSourceHelm(spec.Type, h, p.Child("helm"))...)
	}
	if spec.RollbackOnFailure && !spec.Wait {
		errs = append(errs, field.Invalid(p.Child("rollbackOnFailure"), true, "needs spec.wait: a rollback follows a failed health check"))
	}
	return errs
}

// validateSecretRef checks a reference to a Secret: a name (what says
// what it holds) and, when given, a namespace.
func validateSecretRef(r *SourceSecretRef, what string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), what))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
		}
	}
	if r.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(r.Namespace) {
			errs = append(errs, field.Invalid(p.Child("namespace"), r.Namespace, msg))
		}
	}
	return errs
}

// validateSourceOrder checks spec.dependsOn: Source names, none twice,
// not the Source itself.
func validateSourceOrder(o *Source, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	dp := p.Child("dependsOn")
	seen := map[string]bool{}
	for i, name := range o.Spec.DependsOn {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(dp.Index(i), name, msg))
		}
		switch {
		case name == o.Name && name != "":
			errs = append(errs, field.Invalid(dp.Index(i), name, "a Source cannot depend on itself"))
		case seen[name]:
			errs = append(errs, field.Duplicate(dp.Index(i), name))
		}
		seen[name] = true
	}
	return errs
}

func validateGitURL(raw string, p *field.Path) field.ErrorList {
	if raw == "" {
		return field.ErrorList{field.Required(p, "the repository to clone")}
	}
	// scp-like: git@github.com:org/repo.git
	if !strings.Contains(raw, "://") {
		if user, hostPath, ok := strings.Cut(raw, "@"); ok && user != "" && strings.Contains(hostPath, ":") {
			return nil
		}
		return field.ErrorList{field.Invalid(p, raw, "must be a URL (https://, ssh://, file://, optionally with git+) or user@host:path")}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Invalid(p, raw, err.Error())}
	}
	scheme := strings.TrimPrefix(u.Scheme, "git+")
	if !slices.Contains(gitSchemes, scheme) {
		return field.ErrorList{field.NotSupported(p, u.Scheme, gitSchemes)}
	}
	if scheme != "file" && u.Host == "" {
		return field.ErrorList{field.Invalid(p, raw, "must name a host")}
	}
	return nil
}

func validateHTTPURL(raw string, p *field.Path) field.ErrorList {
	if raw == "" {
		return field.ErrorList{field.Required(p, "the URL of the manifests")}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Invalid(p, raw, err.Error())}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return field.ErrorList{field.NotSupported(p, u.Scheme, []string{"http", "https"})}
	}
	if u.Host == "" {
		return field.ErrorList{field.Invalid(p, raw, "must name a host")}
	}
	return nil
}

// validateSourceHelm checks spec.helm: valuesFrom names ConfigMaps and
// Secrets, values is a map, chart and version belong to a chart
// repository.
func validateSourceHelm(t SourceType, h *SourceHelm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t != SourceTypeHelm {
		if h.Chart != "" {
			errs = append(errs, field.Forbidden(p.Child("chart"), "only a Source of type helm names a chart; others render the chart in their path"))
		}
		if h.Version != "" {
			errs = append(errs, field.Forbidden(p.Child("version"), "only a Source of type helm picks a chart version"))
		}
	}
	if h.TargetNamespace != "" {
		for _, msg := range validation.IsDNS1123Label(h.TargetNamespace) {
			errs = append(errs, field.Invalid(p.Child("targetNamespace"), h.TargetNamespace, msg))
		}
	}
	for i, v := range h.ValuesFrom {
		vp := p.Child("valuesFrom").Index(i)
		if v.Kind != "ConfigMap" && v.Kind != "Secret" {
			errs = append(errs, field.NotSupported(vp.Child("kind"), v.Kind, []string{"ConfigMap", "Secret"}))
		}
		if v.Name == "" {
			errs = append(errs, field.Required(vp.Child("name"), ""))
		}
		if v.TargetPath != "" && strings.Contains("."+v.TargetPath+".", "..") {
			errs = append(errs, field.Invalid(vp.Child("targetPath"), v.TargetPath, "a dotted path of keys, as helm --set takes"))
		}
	}
	if h.Values != nil && len(h.Values.Raw) > 0 {
		var m map[string]any
		if err := json.Unmarshal(h.Values.Raw, &m); err != nil {
			errs = append(errs, field.Invalid(p.Child("values"), string(h.Values.Raw), "must be a map of values"))
		}
	}
	return errs
}
