package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// Alert sends what the syncs of Sources do (a revision applied, a sync
// failed, objects healthy, drift corrected) to a receiver: a webhook, a
// chat channel or a forge's commit statuses. Sending happens beside the
// syncs, never in their way.
type Alert struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, labels, annotations, and what the
	// server sets.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says where events go and which ones.
	Spec AlertSpec `json:"spec,omitempty"`
	// Status says how sending went.
	Status AlertStatus `json:"status,omitempty"`
}

// AlertProviderType names how an Alert's receiver is spoken to.
type AlertProviderType string

// Alert provider types.
const (
	// AlertGeneric posts the event as JSON, signed with HMAC-SHA256 in
	// HeaderAlertSignature when the Secret holds a token.
	AlertGeneric AlertProviderType = "generic"
	// AlertSlack posts a Slack-compatible incoming webhook message.
	AlertSlack AlertProviderType = "slack"
	// AlertGitHub, AlertGitLab and AlertGitea set a commit status on the
	// commit a git Source synced, through the forge's REST API.
	AlertGitHub AlertProviderType = "github"
	AlertGitLab AlertProviderType = "gitlab"
	AlertGitea  AlertProviderType = "gitea"
)

// AlertProviderTypes are the supported provider types.
var AlertProviderTypes = []AlertProviderType{AlertGeneric, AlertSlack, AlertGitHub, AlertGitLab, AlertGitea}

// CommitStatus reports whether the provider sets commit statuses.
func (t AlertProviderType) CommitStatus() bool {
	return t == AlertGitHub || t == AlertGitLab || t == AlertGitea
}

// HeaderAlertSignature carries the HMAC-SHA256 of a generic alert's
// body, as "sha256=<hex>", keyed with the Secret's token.
const HeaderAlertSignature = "X-Berth-Signature"

// HeaderAlertEvent carries a generic alert's event type.
const HeaderAlertEvent = "X-Berth-Event"

// Keys of an Alert provider's Secret.
const (
	// AlertSecretAddress overrides spec.provider.address (a webhook URL
	// is a secret of its own for Slack).
	AlertSecretAddress = "address"
	// AlertSecretToken is the forge's API token, or the generic
	// webhook's HMAC key.
	AlertSecretToken = "token"
)

// Alert event types.
const (
	AlertEventApplied        = "applied"
	AlertEventFailed         = "failed"
	AlertEventHealthy        = "healthy"
	AlertEventDriftCorrected = "driftCorrected"
	// AlertEventPlanned: a branch pushed that is not the Source's (a pull
	// request) was planned; severity error when it would not fit.
	AlertEventPlanned = "planned"
)

// AlertEventTypes are the event types an Alert may select.
var AlertEventTypes = []string{AlertEventApplied, AlertEventFailed, AlertEventHealthy, AlertEventDriftCorrected, AlertEventPlanned}

// Alert severities: info selects every event, error only failures.
const (
	AlertSeverityInfo  = "info"
	AlertSeverityError = "error"
)

// AlertSpec says where an Alert sends and what.
type AlertSpec struct {
	// Provider is the receiver.
	Provider AlertProvider `json:"provider"`
	// Sources names the Sources whose events are sent; "*" is every
	// Source.
	// +listType=set
	Sources []string `json:"sources,omitempty"`
	// SourceSelector selects Sources by their labels, besides Sources.
	SourceSelector *metav1.LabelSelector `json:"sourceSelector,omitempty"`
	// Events are the event types sent (applied, failed, healthy,
	// driftCorrected, planned); every one when empty.
	// +listType=set
	Events []string `json:"events,omitempty"`
	// Severity is info (every event, the default) or error (failures
	// only).
	Severity string `json:"severity,omitempty"`
	// Suspend stops sending; events meanwhile are not kept.
	Suspend bool `json:"suspend,omitempty"`
}

// AlertProvider is the receiver of an Alert.
type AlertProvider struct {
	// Type is generic, slack, github, gitlab or gitea.
	Type AlertProviderType `json:"type"`
	// Address is the webhook URL (generic, slack) or the forge's API
	// base URL (github: https://api.github.com, gitlab:
	// https://gitlab.com, gitea: the server's URL), the default of the
	// forge when empty. The Secret's "address" key overrides it.
	Address string `json:"address,omitempty"`
	// Repository is the forge's owner/name (GitLab: the project path) a
	// commit status goes to; taken from the Source's git URL when empty.
	Repository string `json:"repository,omitempty"`
	// Context names the commit status ("berth/<source>" when empty); the
	// status of a branch's plan is named Context + "/plan".
	Context string `json:"context,omitempty"`
	// SecretRef names the Secret holding "token" (the forge's token, the
	// generic webhook's HMAC key) and, optionally, "address".
	SecretRef *SourceSecretRef `json:"secretRef,omitempty"`
}

// AlertStatus is how an Alert's sending went.
type AlertStatus struct {
	// Sent counts the events delivered since the server started.
	Sent int64 `json:"sent,omitempty"`
	// Failed counts the events given up on after their retries.
	Failed int64 `json:"failed,omitempty"`
	// LastSentTime is when an event was last delivered.
	LastSentTime *metav1.Time `json:"lastSentTime,omitempty"`
	// LastError is the last failure to deliver, with the receiver's
	// answer; cleared by the next delivery.
	LastError string `json:"lastError,omitempty"`
	// LastErrorTime is when LastError happened.
	LastErrorTime *metav1.Time `json:"lastErrorTime,omitempty"`
}
