// Package cronjob holds the CronJob controller: it makes a CronJob's
// Jobs on its cron schedule, in its time zone, as Kubernetes' CronJob
// controller (v2) does: one run for the most recent of the times it
// missed, the concurrency policy, the starting deadline, and the
// history of finished Jobs trimmed to its limits.
package cronjob
