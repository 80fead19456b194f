package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/plan"
	"github.com/berth-dev/berth/reconcile"
	"github.com/berth-dev/berth/reconcile/notify"
)

// maxPushPeek bounds how much of a webhook's body is kept to read the
// pushed branch from: the branch comes first in a push payload, and a
// body cut short is only a trigger, as before.
const maxPushPeek = 1 << 20

// push is what a forge's webhook says was pushed: a push (GitHub, Gitea,
// GitLab) or a pull request (GitHub, Gitea).
type push struct {
	Ref         string `json:"ref"`
	After       string `json:"after"`
	CheckoutSHA string `json:"checkout_sha"`
	Repository  struct {
		DefaultBranch string `json:"default_branch"`
	} `json:"repository"`
	Project struct {
		DefaultBranch string `json:"default_branch"`
	} `json:"project"`
	PullRequest *struct {
		Head struct {
			Ref string `json:"ref"`
			SHA string `json:"sha"`
		} `json:"head"`
	} `json:"pull_request"`
}

// pushedBranch reads the branch a webhook's body names, its new commit,
// and the repository's default branch; "" when it names none (a tag, a
// ping, a body that is not JSON).
func pushedBranch(body []byte) (branch, sha, defaultBranch string) {
	var p push
	if json.Unmarshal(body, &p) != nil {
		return "", "", ""
	}
	defaultBranch = p.Repository.DefaultBranch
	if defaultBranch == "" {
		defaultBranch = p.Project.DefaultBranch
	}
	if pr := p.PullRequest; pr != nil {
		return pr.Head.Ref, pr.Head.SHA, defaultBranch
	}
	branch, ok := strings.CutPrefix(p.Ref, "refs/heads/")
	if !ok {
		return "", "", defaultBranch
	}
	sha = p.After
	if sha == "" {
		sha = p.CheckoutSHA
	}
	return branch, sha, defaultBranch
}

// deletedBranch is the "after" of a push that deletes a branch.
const deletedBranch = "0000000000000000000000000000000000000000"

// branchPlans plans the branches pushed to a git Source's repository
// other than the one it syncs (a pull request's), and sends each plan's
// result to the Alerts as a "planned" event: a commit status on the
// branch's head with the commit status providers. One plan at a time,
// a branch pushed again while queued planned once, at its newest commit.
type branchPlans struct {
	handler *planHandler
	notify  *notify.Dispatcher
	clock   clock.WithTicker
	log     *slog.Logger

	mu    sync.Mutex
	queue *reconcile.Queue
}

// request queues a plan of the branch body names, when it is not the
// branch the Source syncs; false when the webhook is a sync's trigger
// (the Source's branch, a tag, a Source that is not git, or plans not
// running). msg says what was done.
func (b *branchPlans) request(name string, body []byte) (msg string, queued bool) {
	if b == nil {
		return "", false
	}
	branch, sha, defaultBranch := pushedBranch(body)
	if branch == "" {
		return "", false
	}
	obj, err := b.handler.store.Get(sourceKind, "", name)
	if err != nil {
		return "", false
	}
	src := obj.(*api.Source)
	own := src.Spec.Ref
	if own == "" {
		own = defaultBranch
	}
	if src.Spec.Type != api.SourceTypeGit || own == "" || branch == own {
		return "", false
	}
	if sha == deletedBranch {
		return fmt.Sprintf("branch %s of source %s deleted: nothing to plan", branch, name), true
	}
	b.mu.Lock()
	q := b.queue
	b.mu.Unlock()
	if q == nil {
		return "", false
	}
	q.Add(name + " " + branch)
	return fmt.Sprintf("plan of branch %s of source %s queued", branch, name), true
}

// Run plans the queued branches until ctx ends.
func (b *branchPlans) Run(ctx context.Context) {
	q := reconcile.NewQueue(b.clock, reconcile.Backoff{})
	b.mu.Lock()
	b.queue = q
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.queue = nil
		b.mu.Unlock()
		q.ShutDown()
	}()
	go func() { <-ctx.Done(); q.ShutDown() }()
	for {
		key, shutdown := q.Get(ctx)
		if shutdown {
			return
		}
		name, branch, _ := strings.Cut(key, " ")
		b.plan(ctx, name, branch)
		q.Done(key)
	}
}

// plan plans one branch of a Source and publishes the result.
func (b *branchPlans) plan(ctx context.Context, name, branch string) {
	obj, err := b.handler.store.Get(sourceKind, "", name)
	if err != nil {
		return
	}
	src := obj.(*api.Source)
	timeout := DefaultPlanTimeout
	if t := src.Spec.Timeout; t != nil && t.Duration > 0 {
		timeout = t.Duration
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	publish := func(revision string, fits bool, reason, msg string) {
		ev := notify.SourceEvent(src, api.AlertEventPlanned, revision, reason, msg, b.clock.Now())
		ev.Branch = branch
		if !fits {
			ev.Severity = api.AlertSeverityError
		}
		b.notify.Publish(ev)
		b.log.Info("webhook: branch planned", "source", name, "branch", branch, "revision", revision, "fits", fits, "message", msg)
	}
	rev, err := b.handler.fetch(pctx, name, branch)
	switch {
	case err != nil:
		publish("", false, ReasonPlanFailed, fmt.Sprintf("plan of branch %s: %v", branch, err))
		return
	case rev.Err != nil:
		publish(rev.ID, false, ReasonPlanFailed, fmt.Sprintf("plan of branch %s: fetch: %v", branch, rev.Err))
		return
	}
	rep, err := plan.Run(pctx, b.handler.store, rev.Objects, rev.Errors,
		plan.Options{Source: name, Revision: rev.ID, Clock: b.clock, Scheduler: b.handler.sched})
	if err != nil {
		publish(rev.ID, false, ReasonPlanFailed, fmt.Sprintf("plan of branch %s: %v", branch, err))
		return
	}
	if rep.Fits {
		publish(rev.ID, true, ReasonPlanFits, fmt.Sprintf("plan of branch %s fits: %d changes, %d pods placed", branch, len(rep.Changes), rep.Pods.Placed))
		return
	}
	failures := rep.Failures()
	publish(rev.ID, false, ReasonPlanFailed, fmt.Sprintf("plan of branch %s does not fit: %s", branch, strings.Join(failures, "; ")))
}

// Reasons of "planned" events.
const (
	ReasonPlanFits   = "PlanFits"
	ReasonPlanFailed = "PlanFailed"
)
