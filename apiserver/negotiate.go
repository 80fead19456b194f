package apiserver

import (
	"mime"
	"net/http"
	"strings"
)

// mediaRange is one entry of an Accept header.
type mediaRange struct {
	typ    string // "application/json", "*/*"
	params map[string]string
}

// parseAccept splits an Accept header into its entries, in the order the
// client gave them (Kubernetes clients list their preference first and do
// not use q-values).
func parseAccept(header string) []mediaRange {
	if strings.TrimSpace(header) == "" {
		return []mediaRange{{typ: "*/*"}}
	}
	var out []mediaRange
	for part := range strings.SplitSeq(header, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		typ, params, err := mime.ParseMediaType(part)
		if err != nil {
			// A subtype with characters RFC 2045 keeps out, as in
			// "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
			// that client-go asks for, is still taken by its text
			// (without parameters).
			typ, _, _ = strings.Cut(part, ";")
			typ = strings.ToLower(strings.TrimSpace(typ))
			if !strings.Contains(typ, "/") {
				continue
			}
			params = nil
		}
		if q, ok := params["q"]; ok && (q == "0" || q == "0.0" || q == "0.00" || q == "0.000") {
			continue
		}
		out = append(out, mediaRange{typ: typ, params: params})
	}
	return out
}

// jsonLike reports whether a media range admits a JSON body.
func (m mediaRange) jsonLike() bool {
	switch m.typ {
	case "application/json", "application/*", "*/*":
		return true
	}
	return false
}

// as returns the transformation a media range asks for: "" for the plain
// object, or the as= of "as=Table;g=meta.k8s.io;v=v1" and the like.
func (m mediaRange) as() (as, group, version string) {
	return m.params["as"], m.params["g"], m.params["v"]
}

// responseFormat is how a resource request's answer is rendered.
type responseFormat int

const (
	formatObject responseFormat = iota // the kind's own JSON
	formatTable                        // meta.k8s.io/v1 Table, as kubectl get asks
)

// negotiateFormat picks the first entry of the Accept header the server
// can produce: plain JSON, or a Table (v1, or v1beta1 answered as v1 as
// newer servers do). Media types it cannot produce (protobuf, YAML,
// PartialObjectMetadata) are passed over; with none left, 406.
func negotiateFormat(r *http.Request) (responseFormat, error) {
	header := r.Header.Get("Accept")
	for _, m := range parseAccept(header) {
		if !m.jsonLike() {
			continue
		}
		as, g, v := m.as()
		switch {
		case as == "":
			return formatObject, nil
		case as == "Table" && g == "meta.k8s.io" && (v == "v1" || v == "v1beta1"):
			return formatTable, nil
		}
	}
	return formatObject, notAcceptable(header, mediaJSON, "application/json;as=Table;v=v1;g=meta.k8s.io")
}

// Media types of request bodies.
const (
	mediaJSON           = "application/json"
	mediaYAML           = "application/yaml"
	mediaMergePatch     = "application/merge-patch+json"
	mediaStrategicPatch = "application/strategic-merge-patch+json"
	mediaJSONPatch      = "application/json-patch+json"
	mediaApplyPatch     = "application/apply-patch+yaml"
)

// contentType returns the media type of a request body, without
// parameters; "" when the header is absent.
func contentType(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return ""
	}
	typ, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct
	}
	return typ
}
