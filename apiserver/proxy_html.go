package apiserver

import (
	"bytes"
	"compress/gzip"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/html"
)

// A page a pod serves links to its own paths ("/static/app.css"); seen
// through the proxy those must point under …/proxy, or a browser behind
// kubectl proxy asks the API server for them. Kubernetes' proxy rewrites
// such links in HTML answers; berth does so too, for HTML answers plain
// or gzipped up to maxRewrittenHTML, and passes anything else through
// untouched.

// maxRewrittenHTML bounds the HTML page held in memory to rewrite; a
// larger one passes through as it is.
const maxRewrittenHTML = 16 << 20

// linkAttrs are the attributes that hold a URL a browser follows or
// loads.
var linkAttrs = map[string]bool{
	"href": true, "src": true, "action": true, "formaction": true, "poster": true,
	"background": true, "cite": true, "data": true, "longdesc": true, "usemap": true,
	"manifest": true, "icon": true, "codebase": true, "profile": true, "archive": true,
}

// proxiedLocation is where the caller finds loc, a URL in a pod's answer:
// a path of the pod's, or one at an own host (the pod's address, the host
// the caller asked, which the pod learns from X-Forwarded-Host), goes
// under prefix, unless it is there already; anything else (another host,
// a path relative to the page) stays; false when it stays.
func proxiedLocation(loc, prefix string, own ...string) (string, bool) {
	u, err := url.Parse(loc)
	if err != nil || u.Opaque != "" || (u.Host != "" && !slices.Contains(own, u.Host)) || (u.Host == "" && (u.Scheme != "" || !strings.HasPrefix(u.Path, "/"))) {
		return "", false
	}
	// A path alone: the caller's browser keeps the origin it used, the
	// API server's or kubectl proxy's.
	out := u.EscapedPath()
	switch {
	case out == prefix || strings.HasPrefix(out, prefix+"/"):
		// Already under the proxy path: an app told that its external URL
		// is …/proxy/ (a base path) links there itself, and Kubernetes
		// leaves such a link as it is.
	case u.Path == "":
		out = prefix + "/"
	default:
		out = prefix + out
	}
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	if u.Fragment != "" {
		out += "#" + u.EscapedFragment()
	}
	return out, out != loc
}

// rewriteHTML rewrites the links of an HTML answer; the answer is left
// as it is when it is not HTML, is encoded other than by gzip, or is too
// large.
func rewriteHTML(resp *http.Response, prefix string, own ...string) error {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	enc := resp.Header.Get("Content-Encoding")
	switch {
	case mt != "text/html", enc != "" && enc != "gzip", resp.Body == nil, resp.Body == http.NoBody,
		resp.StatusCode == http.StatusNoContent, resp.StatusCode == http.StatusNotModified,
		resp.Request != nil && resp.Request.Method == http.MethodHead:
		return nil
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxRewrittenHTML+1))
	if err != nil {
		return err
	}
	if len(raw) > maxRewrittenHTML {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(raw), resp.Body), resp.Body}
		return nil
	}
	_ = resp.Body.Close()
	page := raw
	if enc == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err == nil {
			page, err = io.ReadAll(io.LimitReader(zr, maxRewrittenHTML+1))
		}
		if err != nil || len(page) > maxRewrittenHTML {
			resp.Body = io.NopCloser(bytes.NewReader(raw))
			return nil
		}
	}
	out := rewriteLinks(page, prefix, own...)
	// The page goes out unencoded: the caller's transport may compress.
	resp.Header.Del("Content-Encoding")
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	resp.ContentLength = int64(len(out))
	resp.Body = io.NopCloser(bytes.NewReader(out))
	return nil
}

// rewriteLinks is page with its link attributes that point at the pod's
// own paths moved under prefix; everything else is copied byte for byte.
func rewriteLinks(page []byte, prefix string, own ...string) []byte {
	var out bytes.Buffer
	out.Grow(len(page))
	z := html.NewTokenizer(bytes.NewReader(page))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			// io.EOF, or a page the tokenizer gives up on: what is left
			// goes as it is.
			out.Write(z.Raw())
			return out.Bytes()
		}
		raw := z.Raw()
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			out.Write(raw)
			continue
		}
		rawCopy := append([]byte(nil), raw...)
		tok := z.Token()
		changed := false
		for i, a := range tok.Attr {
			if !linkAttrs[a.Key] || a.Namespace != "" {
				continue
			}
			if loc, ok := proxiedLocation(strings.TrimSpace(a.Val), prefix, own...); ok {
				tok.Attr[i].Val = loc
				changed = true
			}
		}
		if changed {
			out.WriteString(tok.String())
		} else {
			out.Write(rawCopy)
		}
	}
}
