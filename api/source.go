package api

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// Source is a place desired state comes from: a git repository, a
// directory or a URL. Its status tells what was last applied and why not.
type Source struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: name, namespace, labels,
	// annotations and owner references, and what the server sets (uid,
	// resourceVersion, generation, creationTimestamp, managedFields).
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says where the source reads from, as the server's --source flag
	// gave it.
	Spec SourceSpec `json:"spec,omitempty"`
	// Status is what the applier last did with the source.
	Status SourceStatus `json:"status,omitempty"`
}

// SourceType is git, dir or http.
type SourceType string

// Source types.
const (
	SourceTypeGit  SourceType = "git"
	SourceTypeDir  SourceType = "dir"
	SourceTypeHTTP SourceType = "http"
	// SourceTypeAPI names objects written through the API; it is an owner,
	// never a Source object.
	SourceTypeAPI SourceType = "api"
)

// SourceSpec describes where a source reads from.
type SourceSpec struct {
	// Type is git, dir or http.
	Type SourceType `json:"type"`
	// URL is the repository or document URL, or the directory path.
	URL string `json:"url"`
	// Ref is a branch, tag or commit of a git source.
	Ref string `json:"ref,omitempty"`
	// Path is the folder inside a git repository.
	Path string `json:"path,omitempty"`
	// Interval is the poll period.
	Interval *metav1.Duration `json:"interval,omitempty"`
	// AllowMassPrune lets a revision prune more than half of the objects.
	AllowMassPrune bool `json:"allowMassPrune,omitempty"`
	// Options holds authentication and other per-source options.
	Options map[string]string `json:"options,omitempty"`
	// SecretRef names a Secret holding the credentials of a git source:
	// username and password (HTTPS), identity and known_hosts (SSH).
	SecretRef *SourceSecretRef `json:"secretRef,omitempty"`
	// Decryption names the Secret holding the age identities that open
	// the files of the source encrypted with SOPS; they are read into
	// memory only.
	Decryption *SourceDecryption `json:"decryption,omitempty"`
	// Suspend stops syncing: nothing is fetched or applied until it is
	// false again (`berth suspend|resume source NAME`).
	Suspend bool `json:"suspend,omitempty"`
	// DependsOn names Sources that must be Ready at their current revision
	// before this one syncs.
	// +listType=set
	DependsOn []string `json:"dependsOn,omitempty"`
	// Wait makes a sync wait until every object it applied is healthy
	// (kstatus: rolled out, complete, Ready) before it reports Ready.
	Wait bool `json:"wait,omitempty"`
	// Timeout bounds that wait; DefaultSourceTimeout when unset.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// RollbackOnFailure applies the last healthy revision again when the
	// objects of a new one do not become healthy within Timeout.
	RollbackOnFailure bool `json:"rollbackOnFailure,omitempty"`
	// Gate holds a revision back until a check passes. "plan" applies a
	// revision only when its plan (as `berth plan source` makes it) fits:
	// every pod placed, no write refused, no claim left Pending, no
	// rollout stalled. One that does not is rejected as an invalid one
	// is, the plan's findings as its errors, and the revision applied
	// before stays live.
	Gate SourceGate `json:"gate,omitempty"`
	// Helm says how a chart is rendered: the chart in the source's path,
	// or, for a Source of type helm, the chart named here in the chart
	// repository at spec.url.
	Helm *SourceHelm `json:"helm,omitempty"`
}

// SourceHelm is a Source's Helm release: its name and namespace, its
// values, and for a chart repository the chart and version.
type SourceHelm struct {
	// ReleaseName is .Release.Name; the Source's name when empty.
	ReleaseName string `json:"releaseName,omitempty"`
	// TargetNamespace is .Release.Namespace; "default" when empty.
	TargetNamespace string `json:"targetNamespace,omitempty"`
	// Chart is the chart's name in the chart repository (type helm).
	Chart string `json:"chart,omitempty"`
	// Version is the chart's version, or a semver range (">=1.2 <2");
	// the newest version when empty (type helm).
	Version string `json:"version,omitempty"`
	// ValuesFrom are ConfigMaps and Secrets whose keys hold values, merged
	// in order over the chart's values.yaml, read at each sync.
	// +listType=atomic
	ValuesFrom []SourceValuesReference `json:"valuesFrom,omitempty"`
	// Values are merged last, over ValuesFrom.
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

// SourceValuesReference names values in a ConfigMap or Secret, as Flux's
// HelmRelease valuesFrom does.
type SourceValuesReference struct {
	// Kind is ConfigMap or Secret.
	Kind string `json:"kind"`
	// Name is the object's name.
	Name string `json:"name"`
	// Namespace is the object's namespace; kube-system when empty.
	Namespace string `json:"namespace,omitempty"`
	// ValuesKey is the key holding the values; "values.yaml" when empty.
	ValuesKey string `json:"valuesKey,omitempty"`
	// TargetPath, when set, puts the key's whole content (as a string) at
	// this dotted path of the values instead of merging it as YAML.
	TargetPath string `json:"targetPath,omitempty"`
	// Optional lets the object or key be missing.
	Optional bool `json:"optional,omitempty"`
}

// SourceTypeHelm is a chart repository: spec.url serves index.yaml.
const SourceTypeHelm SourceType = "helm"

// SourceGate names the check a Source's revisions must pass.
type SourceGate string

// SourceGatePlan gates a Source's revisions on their plan.
const SourceGatePlan SourceGate = "plan"

// SourceSecretRef names the Secret a source reads its credentials from.
type SourceSecretRef struct {
	// Namespace of the Secret; kube-system when empty.
	Namespace string `json:"namespace,omitempty"`
	// Name of the Secret.
	Name string `json:"name"`
}

// SourceDecryption says how a source's encrypted files are opened.
type SourceDecryption struct {
	// Provider is "sops", the only one.
	Provider string `json:"provider,omitempty"`
	// SecretRef names the Secret whose values (every key, joined) hold
	// the age identities (AGE-SECRET-KEY-1… lines).
	SecretRef SourceSecretRef `json:"secretRef"`
}

// Keys of a source's credentials Secret.
const (
	SourceSecretUsername   = "username"
	SourceSecretPassword   = "password"
	SourceSecretIdentity   = "identity"
	SourceSecretKnownHosts = "known_hosts"
)

// DefaultSourceTimeout bounds a sync's wait for health when the Source
// sets no spec.timeout.
const DefaultSourceTimeout = 5 * time.Minute

// SourceStatus is what the applier last did with a source.
type SourceStatus struct {
	// ObservedGeneration is the generation of the spec the last sync used.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastAppliedRevision is the revision whose objects are live: a commit
	// SHA for git, a content hash otherwise.
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`
	// LastAttemptedRevision is the revision the last sync read, whether it
	// was applied or rejected.
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`
	// LastAppliedCommit describes the commit LastAppliedRevision names,
	// for a git source: its subject, author and time.
	LastAppliedCommit *SourceCommit `json:"lastAppliedCommit,omitempty"`
	// LastSyncTime is when the last sync ended.
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// LastSyncDuration is how long the last sync took to validate the
	// revision, diff it against the store and write it.
	LastSyncDuration *metav1.Duration `json:"lastSyncDuration,omitempty"`
	// Objects is the number of objects in the last applied revision. The
	// objects themselves carry the berth.dev/source annotation naming the
	// source; the store indexes them by it.
	Objects int32 `json:"objects,omitempty"`
	// Conditions hold Ready, whose message lists every error of a rejected
	// revision with its file, document and field.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastHandledReconcileAt is the value of the
	// AnnotationReconcileRequestedAt annotation the last finished sync
	// answered, so that `berth reconcile source` knows its request is done
	// (Flux's status.lastHandledReconcileAt).
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// LastHealthyRevision is the last revision whose objects all became
	// healthy: what spec.rollbackOnFailure applies again.
	LastHealthyRevision string `json:"lastHealthyRevision,omitempty"`
	// Health sums up the kstatus of the objects last applied: Healthy,
	// Progressing, Degraded or Unknown (no wait asked).
	Health string `json:"health,omitempty"`
	// Unhealthy lists the objects of the last sync that were not healthy,
	// as "Kind/namespace/name: why".
	// +listType=atomic
	Unhealthy []string `json:"unhealthy,omitempty"`
	// History holds the last syncs, newest first, at most
	// MaxSourceHistory.
	// +listType=atomic
	History []SourceSync `json:"history,omitempty"`
	// Helm is the history of the Source's Helm release, newest first, as
	// `helm history` shows it: a revision for each change of chart
	// version or values that was applied.
	// +listType=atomic
	Helm []SourceHelmRelease `json:"helm,omitempty"`
}

// SourceHelmRelease is one revision of a Source's Helm release.
type SourceHelmRelease struct {
	// Revision counts from 1.
	Revision int64 `json:"revision"`
	// Chart is the chart's name-version, as `helm list` shows it.
	Chart string `json:"chart"`
	// AppVersion is the chart's appVersion.
	AppVersion string `json:"appVersion,omitempty"`
	// Status is deployed, superseded or failed.
	Status string `json:"status"`
	// Updated is when the revision was applied.
	Updated metav1.Time `json:"updated"`
	// Description says what happened (Install complete, Upgrade complete,
	// Rollback to 2).
	Description string `json:"description,omitempty"`
	// Digest identifies the rendered release: chart version and values.
	Digest string `json:"digest,omitempty"`
	// SourceRevision is the source's revision it was rendered from.
	SourceRevision string `json:"sourceRevision,omitempty"`
}

// MaxHelmHistory bounds status.helm, as helm's --history-max does.
const MaxHelmHistory = 10

// Helm release statuses, as helm names them.
const (
	HelmDeployed   = "deployed"
	HelmSuperseded = "superseded"
	HelmFailed     = "failed"
)

// SourceSync is one sync of a source, as `berth describe source` lists
// them.
type SourceSync struct {
	// Revision is the revision the sync read.
	Revision string `json:"revision,omitempty"`
	// Time is when the sync ended.
	Time metav1.Time `json:"time"`
	// Duration is how long it took.
	Duration *metav1.Duration `json:"duration,omitempty"`
	// Reason is the Ready reason it ended with.
	Reason string `json:"reason"`
	// Message is its Ready message.
	Message string `json:"message,omitempty"`
}

// MaxSourceHistory bounds status.history.
const MaxSourceHistory = 10

// SourceCommit is what `git log -1` says of a commit, so that a reader of
// a Source sees which change is live without the repository at hand.
type SourceCommit struct {
	// Message is the first line of the commit message, at most 256 bytes.
	Message string `json:"message,omitempty"`
	// Author is the commit's author, as "Name <email>".
	Author string `json:"author,omitempty"`
	// Time is the author's time of the commit.
	Time metav1.Time `json:"time,omitempty"`
}

// Source condition types and reasons.
const (
	SourceReady = "Ready"

	ReasonSucceeded       = "Succeeded"
	ReasonInvalidRevision = "InvalidRevision"
	ReasonFetchFailed     = "FetchFailed"
	ReasonPruneGuard      = "PruneGuard"
	// ReasonForbidden: the store refused the revision (a ResourceQuota),
	// so nothing of it was written.
	ReasonForbidden   = "Forbidden"
	ReasonProgressing = "Progressing"
	// ReasonNotConfigured: the source is no longer among the server's
	// --source flags; its objects are kept and no longer synced.
	ReasonNotConfigured = "NotConfigured"
	// ReasonSuspended: spec.suspend holds the source.
	ReasonSuspended = "Suspended"
	// ReasonDependencyNotReady: a Source of spec.dependsOn is not Ready
	// at its current revision yet.
	ReasonDependencyNotReady = "DependencyNotReady"
	// ReasonHealthCheckFailed: what was applied did not become healthy
	// within spec.timeout.
	ReasonHealthCheckFailed = "HealthCheckFailed"
	// ReasonRolledBack: a revision's objects did not become healthy and
	// the last healthy revision was applied again.
	ReasonRolledBack = "RolledBack"
	// ReasonCycle: spec.dependsOn, or the Sources that declare Sources,
	// make a cycle.
	ReasonCycle = "Cycle"
)

// Health values of SourceStatus.Health.
const (
	SourceHealthy       = "Healthy"
	SourceProgressing   = "Progressing"
	SourceDegraded      = "Degraded"
	SourceHealthUnknown = "Unknown"
)

// AnnotationBootstrap marks a Source a --source flag of the server made:
// the server keeps its spec in step with the flag, and marks it
// NotConfigured once no flag names it.
const AnnotationBootstrap = "berth.dev/bootstrap"

// Annotations on a Source object through which users ask for a sync.
const (
	// AnnotationReconcileRequestedAt set to a new value (a timestamp) asks
	// for a sync now; the sync that answers it copies the value to
	// status.lastHandledReconcileAt.
	AnnotationReconcileRequestedAt = "berth.dev/reconcile-requested-at"
	// AnnotationAllowPrune names the one revision allowed past the prune
	// guard (`berth reconcile source --allow-prune`).
	AnnotationAllowPrune = "berth.dev/allow-prune"
)
