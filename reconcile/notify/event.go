package notify

import (
	"net/url"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/api"
)

// Event is one thing a sync of a Source did, as the receivers get it.
type Event struct {
	// Source is the Source's name.
	Source string `json:"source"`
	// Type is applied, failed, healthy or driftCorrected
	// (api.AlertEvent*).
	Type string `json:"type"`
	// Severity is info, or error for a failure.
	Severity string `json:"severity"`
	// Revision is the revision the sync read: a commit for git.
	Revision string `json:"revision,omitempty"`
	// Reason is the Source's Ready reason (or the event's) after it.
	Reason string `json:"reason,omitempty"`
	// Message says what happened, in the Source's words.
	Message string `json:"message"`
	// Time is when it happened.
	Time time.Time `json:"time"`
	// URL is where the Source reads from.
	URL string `json:"url,omitempty"`
	// Pending marks a revision applied whose health check follows
	// (spec.wait): a commit status says pending, not success.
	Pending bool `json:"pending,omitempty"`
	// Branch is the branch a "planned" event planned.
	Branch string `json:"branch,omitempty"`

	labels map[string]string
}

// SourceEvent is an event about src: its name, URL and labels filled in.
func SourceEvent(src *api.Source, typ, revision, reason, message string, at time.Time) Event {
	sev := api.AlertSeverityInfo
	if typ == api.AlertEventFailed {
		sev = api.AlertSeverityError
	}
	return Event{Source: src.Name, Type: typ, Severity: sev, Revision: revision, Reason: reason,
		Message: message, Time: at, URL: src.Spec.URL, labels: src.Labels}
}

// Matches reports whether an Alert selects ev: its Source (by name, "*"
// or labels), its type and its severity.
func Matches(a *api.Alert, ev Event) bool {
	if a.Spec.Suspend {
		return false
	}
	if len(a.Spec.Events) > 0 && !contains(a.Spec.Events, ev.Type) {
		return false
	}
	if a.Spec.Severity == api.AlertSeverityError && ev.Severity != api.AlertSeverityError {
		return false
	}
	if contains(a.Spec.Sources, "*") || contains(a.Spec.Sources, ev.Source) {
		return true
	}
	if a.Spec.SourceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(a.Spec.SourceSelector)
		return err == nil && sel.Matches(labels.Set(ev.labels))
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// commitSHA matches the revision of a git source: a commit's hash.
var commitSHA = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// Repository is the owner/name path of a git URL (https://host/o/r.git,
// git@host:o/r.git, ssh://git@host/o/r), without ".git"; "" when none.
func Repository(raw string) string {
	raw = strings.TrimPrefix(raw, "git+")
	var path string
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" {
		path = u.Path
	} else if _, after, ok := strings.Cut(raw, ":"); ok {
		path = after // scp-like: git@host:owner/name.git
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	if !strings.Contains(path, "/") {
		return ""
	}
	return path
}
