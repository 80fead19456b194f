package notify

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/berth-dev/berth/api"
)

// Default API addresses of the forges.
const (
	DefaultGitHubAddress = "https://api.github.com"
	DefaultGitLabAddress = "https://gitlab.com"
)

// maxDescription bounds a commit status's description: GitHub's limit.
const maxDescription = 140

// errSkip marks an event a provider has nothing to say about (drift to a
// commit status, a revision that is no commit).
var errSkip = errors.New("nothing to send")

// Commit status states, as GitHub and Gitea name them.
const (
	statePending = "pending"
	stateSuccess = "success"
	stateFailure = "failure"
)

// commitState is the commit status of an event.
func commitState(ev Event) string {
	switch {
	case ev.Type == api.AlertEventFailed, ev.Severity == api.AlertSeverityError:
		return stateFailure
	case ev.Pending:
		return statePending
	}
	return stateSuccess
}

// request is the HTTP request that tells the provider of a about ev;
// secret is the data of its Secret (nil when it names none). errSkip
// when the provider has nothing to say of ev.
func request(a *api.Alert, secret map[string][]byte, ev Event) (*http.Request, error) {
	p := a.Spec.Provider
	address := p.Address
	if v := secret[api.AlertSecretAddress]; len(v) > 0 {
		address = strings.TrimSpace(string(v))
	}
	token := strings.TrimSpace(string(secret[api.AlertSecretToken]))
	switch p.Type {
	case api.AlertGeneric:
		body, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		req, err := post(address, body)
		if err != nil {
			return nil, err
		}
		req.Header.Set(api.HeaderAlertEvent, ev.Type)
		if token != "" {
			mac := hmac.New(sha256.New, []byte(token))
			mac.Write(body)
			req.Header.Set(api.HeaderAlertSignature, "sha256="+hex.EncodeToString(mac.Sum(nil)))
		}
		return req, nil
	case api.AlertSlack:
		body, err := json.Marshal(slackMessage(ev))
		if err != nil {
			return nil, err
		}
		return post(address, body)
	}
	if !p.Type.CommitStatus() {
		return nil, fmt.Errorf("provider type %q is not supported", p.Type)
	}
	if ev.Type == api.AlertEventDriftCorrected || !commitSHA.MatchString(ev.Revision) {
		return nil, errSkip
	}
	repo := p.Repository
	if repo == "" {
		repo = Repository(ev.URL)
	}
	if repo == "" {
		return nil, fmt.Errorf("no repository for the commit status: the Source's URL %q names none; set spec.provider.repository", ev.URL)
	}
	name := p.Context
	if name == "" {
		name = "berth/" + ev.Source
	}
	if ev.Type == api.AlertEventPlanned {
		name += "/plan"
	}
	desc := ev.Message
	if len(desc) > maxDescription {
		desc = desc[:maxDescription-1] + "…"
	}
	state := commitState(ev)
	var (
		target string
		body   any
		auth   [2]string
	)
	switch p.Type {
	case api.AlertGitHub:
		if address == "" {
			address = DefaultGitHubAddress
		}
		target = strings.TrimRight(address, "/") + "/repos/" + repo + "/statuses/" + ev.Revision
		body = map[string]string{"state": state, "context": name, "description": desc}
		auth = [2]string{"Authorization", "Bearer " + token}
	case api.AlertGitea:
		target = strings.TrimRight(address, "/") + "/api/v1/repos/" + repo + "/statuses/" + ev.Revision
		body = map[string]string{"state": state, "context": name, "description": desc}
		auth = [2]string{"Authorization", "token " + token}
	case api.AlertGitLab:
		if address == "" {
			address = DefaultGitLabAddress
		}
		if state == stateFailure {
			state = "failed"
		}
		target = strings.TrimRight(address, "/") + "/api/v4/projects/" + url.PathEscape(repo) + "/statuses/" + ev.Revision
		body = map[string]string{"state": state, "name": name, "description": desc}
		auth = [2]string{"PRIVATE-TOKEN", token}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := post(target, data)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set(auth[0], auth[1])
	}
	req.Header.Set("Accept", "application/json")
	return req, nil
}

func post(address string, body []byte) (*http.Request, error) {
	if address == "" {
		return nil, errors.New("no address: set spec.provider.address or the Secret's \"address\" key")
	}
	req, err := http.NewRequest(http.MethodPost, address, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("address: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "berth")
	return req, nil
}

// slackMessage is a Slack-compatible incoming webhook message: a line of
// text, and an attachment coloured by severity holding the message.
func slackMessage(ev Event) map[string]any {
	color := "good"
	switch {
	case ev.Type == api.AlertEventFailed:
		color = "danger"
	case ev.Pending, ev.Type == api.AlertEventDriftCorrected:
		color = "warning"
	}
	text := fmt.Sprintf("source/%s: %s", ev.Source, ev.Type)
	if ev.Branch != "" {
		text += " branch " + ev.Branch
	}
	if ev.Revision != "" {
		text += " " + shortRevision(ev.Revision)
	}
	return map[string]any{
		"username": "berth",
		"text":     text,
		"attachments": []map[string]any{{
			"color":  color,
			"title":  ev.Reason,
			"text":   ev.Message,
			"footer": ev.URL,
			"ts":     ev.Time.Unix(),
		}},
	}
}

func shortRevision(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	return r
}
