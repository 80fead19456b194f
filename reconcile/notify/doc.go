// Package notify sends what the syncs of Sources do to the receivers
// Alert objects name (a signed JSON webhook, a Slack-compatible webhook,
// GitHub, GitLab and Gitea commit statuses), from queues of its own with
// retries and back-off, so that a receiver that is down delays nothing
// but its own deliveries.
package notify
