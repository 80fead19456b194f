package api

import (
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateAlertSpec checks an Alert: a known provider with an address
// where it has no default, a Secret for what needs a token, and a
// selection of Sources and events that can match something.
func validateAlertSpec(spec *AlertSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	pp := p.Child("provider")
	prov := &spec.Provider
	switch {
	case prov.Type == "":
		errs = append(errs, field.Required(pp.Child("type"), ""))
	case !slices.Contains(AlertProviderTypes, prov.Type):
		errs = append(errs, field.NotSupported(pp.Child("type"), prov.Type, AlertProviderTypes))
	}
	if prov.Address != "" {
		u, err := url.Parse(prov.Address)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(pp.Child("address"), prov.Address, err.Error()))
		case u.Scheme != "http" && u.Scheme != "https":
			errs = append(errs, field.NotSupported(pp.Child("address"), u.Scheme, []string{"http", "https"}))
		case u.Host == "":
			errs = append(errs, field.Invalid(pp.Child("address"), prov.Address, "must name a host"))
		}
	} else if (prov.Type == AlertGeneric || prov.Type == AlertSlack || prov.Type == AlertGitea) && prov.SecretRef == nil {
		errs = append(errs, field.Required(pp.Child("address"), "the receiver's URL, here or in the Secret's \"address\" key"))
	}
	if prov.Type.CommitStatus() && prov.SecretRef == nil {
		errs = append(errs, field.Required(pp.Child("secretRef"), "the Secret holding the forge's API token"))
	}
	if r := prov.Repository; r != "" {
		parts := strings.Split(r, "/")
		if len(parts) < 2 || slices.Contains(parts, "") || slices.Contains(parts, "..") {
			errs = append(errs, field.Invalid(pp.Child("repository"), r, "must be owner/name (GitLab: group/…/project)"))
		}
		if prov.Type != "" && !prov.Type.CommitStatus() {
			errs = append(errs, field.Forbidden(pp.Child("repository"), "only commit status providers (github, gitlab, gitea) take a repository"))
		}
	}
	if len(prov.Context) > 255 {
		errs = append(errs, field.TooLong(pp.Child("context"), prov.Context, 255))
	}
	if r := prov.SecretRef; r != nil {
		errs = append(errs, validateSecretRef(r, "the Secret holding the token", pp.Child("secretRef"))...)
	}
	sp := p.Child("sources")
	seen := map[string]bool{}
	for i, name := range spec.Sources {
		if name != "*" {
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(sp.Index(i), name, msg))
			}
		}
		if seen[name] {
			errs = append(errs, field.Duplicate(sp.Index(i), name))
		}
		seen[name] = true
	}
	if len(spec.Sources) == 0 && spec.SourceSelector == nil {
		errs = append(errs, field.Required(sp, `the Sources whose events are sent ("*" for every one), or spec.sourceSelector`))
	}
	if spec.SourceSelector != nil {
		errs = append(errs, validateLabelSelector(spec.SourceSelector, false, p.Child("sourceSelector"))...)
	}
	ep := p.Child("events")
	seenEv := map[string]bool{}
	for i, ev := range spec.Events {
		if !slices.Contains(AlertEventTypes, ev) {
			errs = append(errs, field.NotSupported(ep.Index(i), ev, AlertEventTypes))
		}
		if seenEv[ev] {
			errs = append(errs, field.Duplicate(ep.Index(i), ev))
		}
		seenEv[ev] = true
	}
	if s := spec.Severity; s != "" && s != AlertSeverityInfo && s != AlertSeverityError {
		errs = append(errs, field.NotSupported(p.Child("severity"), s, []string{AlertSeverityInfo, AlertSeverityError}))
	}
	return errs
}
