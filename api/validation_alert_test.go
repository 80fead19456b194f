package api

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateAlert(t *testing.T) {
	runValidation(t, func() *Alert {
		return &Alert{ObjectMeta: metav1.ObjectMeta{Name: "commits"}, Spec: AlertSpec{
			Provider: AlertProvider{Type: AlertGitHub, SecretRef: &SourceSecretRef{Name: "token"}},
			Sources:  []string{"fleet"},
		}}
	}, []validationCase[*Alert]{
		{"every source", func(o *Alert) { o.Spec.Sources = []string{"*"} }, nil},
		{"no type", func(o *Alert) { o.Spec.Provider.Type = "" }, []string{"spec.provider.type: Required value"}},
		{"unknown type", func(o *Alert) { o.Spec.Provider.Type = "pager" },
			[]string{`spec.provider.type: Unsupported value: "pager"`}},
		{"forge without token", func(o *Alert) { o.Spec.Provider.SecretRef = nil },
			[]string{"spec.provider.secretRef: Required value"}},
		{"webhook without address", func(o *Alert) { o.Spec.Provider = AlertProvider{Type: AlertGeneric} },
			[]string{"spec.provider.address: Required value"}},
		{"address in the secret", func(o *Alert) { o.Spec.Provider.Type = AlertSlack }, nil},
		{"bad scheme", func(o *Alert) { o.Spec.Provider.Address = "ftp://x" },
			[]string{`spec.provider.address: Unsupported value: "ftp"`}},
		{"no host", func(o *Alert) { o.Spec.Provider.Address = "https://" },
			[]string{`spec.provider.address: Invalid value: "https://": must name a host`}},
		{"repository", func(o *Alert) { o.Spec.Provider.Repository = "only" },
			[]string{`spec.provider.repository: Invalid value: "only"`}},
		{"repository of a webhook", func(o *Alert) {
			o.Spec.Provider.Type, o.Spec.Provider.Address, o.Spec.Provider.Repository = AlertGeneric, "https://h/x", "a/b"
		}, []string{"spec.provider.repository: Forbidden"}},
		{"secret name", func(o *Alert) { o.Spec.Provider.SecretRef.Name = "Bad_Name" },
			[]string{`spec.provider.secretRef.name: Invalid value: "Bad_Name"`}},
		{"no selection", func(o *Alert) { o.Spec.Sources = nil }, []string{"spec.sources: Required value"}},
		{"selector only", func(o *Alert) {
			o.Spec.Sources, o.Spec.SourceSelector = nil, &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}
		}, nil},
		{"bad source and twice", func(o *Alert) { o.Spec.Sources = []string{"A", "a", "a"} },
			[]string{`spec.sources[0]: Invalid value: "A"`, `spec.sources[2]: Duplicate value: "a"`}},
		{"events", func(o *Alert) { o.Spec.Events = []string{"applied", "deployed", "applied"} },
			[]string{`spec.events[1]: Unsupported value: "deployed"`, `spec.events[2]: Duplicate value: "applied"`}},
		{"severity", func(o *Alert) { o.Spec.Severity = "warning" },
			[]string{`spec.severity: Unsupported value: "warning"`}},
	})
}
