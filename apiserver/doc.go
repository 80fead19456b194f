// Package apiserver serves berth's store over Kubernetes' REST API (SPEC
// §5): discovery, get, list, watch, create, update, patch, delete and the
// status subresource for every registered kind, the proxy subresources of
// pods and services (a request passed on to a pod's port), the
// subresources a server registers with HandleSubresource (pods/log, exec,
// attach, portforward, eviction, serviceaccounts/token), with
// authentication and authorization (apiserver/auth), admission
// (apiserver/admission), Status errors, Table
// responses for kubectl, server-side dry runs, the self reviews of kubectl
// auth can-i and whoami, the OpenAPI v3 and v2 documents, health, version
// and metrics.
package apiserver
