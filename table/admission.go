package table

import (
	"strconv"
	"time"

	"github.com/berth-dev/berth/api"
)

// The admission kinds' columns, as kubectl prints them.
func init() {
	webhooks := func(n int) string { return strconv.Itoa(n) }
	definitions["ValidatingWebhookConfiguration"] = []Column{nameColumn,
		{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks configured.",
			cell: on(func(c *api.ValidatingWebhookConfiguration, _ time.Time) string { return webhooks(len(c.Webhooks)) })},
		ageColumn}
	definitions["MutatingWebhookConfiguration"] = []Column{nameColumn,
		{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks configured.",
			cell: on(func(c *api.MutatingWebhookConfiguration, _ time.Time) string { return webhooks(len(c.Webhooks)) })},
		ageColumn}
	definitions["ValidatingAdmissionPolicy"] = []Column{nameColumn,
		{Name: "Validations", Type: "integer", Description: "Validations indicates the number of validation rules defined.",
			cell: on(func(p *api.ValidatingAdmissionPolicy, _ time.Time) string {
				return strconv.Itoa(len(p.Spec.Validations))
			})},
		{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy.",
			cell: on(func(p *api.ValidatingAdmissionPolicy, _ time.Time) string {
				if pk := p.Spec.ParamKind; pk != nil {
					return pk.APIVersion + "/" + pk.Kind
				}
				return "<unset>"
			})},
		ageColumn}
	definitions["ValidatingAdmissionPolicyBinding"] = []Column{nameColumn,
		{Name: "PolicyName", Type: "string", Description: "PolicyName indicates the policy definition which the policy binding binded to.",
			cell: on(func(b *api.ValidatingAdmissionPolicyBinding, _ time.Time) string { return b.Spec.PolicyName })},
		{Name: "ParamRef", Type: "string", Description: "ParamRef indicates the param resource which sets the configration param.",
			cell: on(func(b *api.ValidatingAdmissionPolicyBinding, _ time.Time) string {
				pr := b.Spec.ParamRef
				switch {
				case pr == nil:
					return "<unset>"
				case pr.Name == "":
					return "*"
				case pr.Namespace != "":
					return pr.Namespace + "/" + pr.Name
				}
				return pr.Name
			})},
		ageColumn}
}
