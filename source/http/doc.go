// Package http is the source of a URL that serves one YAML or JSON stream
// of manifests: polled with conditional requests (ETag, Last-Modified), so
// an unchanged document costs a 304 and makes no revision; a triggered
// sync fetches it whole.
package http
