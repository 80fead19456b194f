// Package job holds the Job controller: it runs a Job's pods toward its
// completions, parallelism at a time, retries failures with back-off up
// to backoffLimit, applies the pod failure and success policies, and
// reports the Complete and Failed conditions as Kubernetes' job
// controller does; and the store hook that gives a Job its selector.
package job
