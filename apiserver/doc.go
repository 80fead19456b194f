// Package apiserver serves berth's store over Kubernetes' REST API (SPEC
// §5): discovery, get, list, watch, create, update, patch, delete and the
// status subresource for every registered kind, with authentication,
// authorization, admission, Status errors, Table responses for kubectl,
// server-side dry runs, the self reviews of kubectl auth can-i and whoami,
// the OpenAPI v3 and v2 documents, health, version and metrics.
package apiserver
