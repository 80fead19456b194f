// Package apiserver serves berth's store over Kubernetes' REST API (SPEC
// §5): discovery, get, list, watch, create, update, patch, delete and the
// status subresource for every registered kind, with authentication,
// authorization, admission, Status errors, Table responses for kubectl,
// health, version and metrics.
package apiserver
