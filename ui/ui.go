package ui

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/client"
)

// Prefix is where the dashboard is served on the API's address.
const Prefix = "/ui/"

// ContentSecurityPolicy allows the dashboard's own script, styles and
// streams and nothing else: no inline script, no other origin, no frames.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

//go:embed assets
var assets embed.FS

// Config says where the API is that the dashboard reads through.
type Config struct {
	// API is the API server's base URL, as a client on this machine
	// dials it.
	API string
	// CAData is the PEM of the CA of the API's serving certificate.
	CAData []byte
	// Transport, when set, carries every viewer's requests, so that they
	// share connections; one is built from CAData otherwise.
	Transport http.RoundTripper
	Clock     clock.WithTicker
	Logger    *slog.Logger
}

// Server serves the dashboard. It holds the viewers' sessions in memory.
type Server struct {
	cfg      Config
	log      *slog.Logger
	clock    clock.WithTicker
	sessions *sessions
	tmpl     *template.Template
	mux      *http.ServeMux
	static   http.Handler
	// ctx ends with Close, and with it every stream.
	ctx    context.Context
	cancel context.CancelFunc
}

// New makes the dashboard's handler; Close ends its streams.
func New(cfg Config) (*Server, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Transport == nil {
		tr, err := client.NewTransport(&client.Config{Server: cfg.API, CAData: cfg.CAData})
		if err != nil {
			return nil, fmt.Errorf("ui: %w", err)
		}
		cfg.Transport = tr
	}
	if _, err := client.ParseServers(cfg.API); err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	tmpl, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("ui: templates: %w", err)
	}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, sessions: newSessions(cfg.Clock), tmpl: tmpl, mux: http.NewServeMux(),
		static: http.StripPrefix(Prefix+"static/", http.FileServerFS(static))}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.routes()
	return s, nil
}

// Close ends every open stream and the idle connections to the API;
// pages are still served.
func (s *Server) Close() {
	s.cancel()
	if t, ok := s.cfg.Transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
}

// Sessions is the number of live sessions, for tests and metrics.
func (s *Server) Sessions() int { return s.sessions.count() }

func (s *Server) routes() {
	s.mux.HandleFunc("GET /ui/static/{file}", s.serveStatic)
	s.mux.HandleFunc("GET /ui/login", s.loginPage)
	s.mux.HandleFunc("POST /ui/login", s.login)
	s.mux.HandleFunc("POST /ui/logout", s.action(s.logout))
	s.mux.HandleFunc("GET /ui/{$}", s.page(s.overview))
	s.mux.HandleFunc("GET /ui/sources/{name}", s.page(s.sourcePage))
	s.mux.HandleFunc("POST /ui/sources/{name}/sync", s.action(s.syncSource))
	s.mux.HandleFunc("POST /ui/sources/{name}/suspend", s.action(s.suspendSource(true)))
	s.mux.HandleFunc("POST /ui/sources/{name}/resume", s.action(s.suspendSource(false)))
	s.mux.HandleFunc("GET /ui/objects/{resource}/{namespace}/{name}", s.page(s.objectPage))
	s.mux.HandleFunc("GET /ui/nodes", s.page(s.nodesPage))
	s.mux.HandleFunc("GET /ui/stream/{path...}", s.stream(s.changes))
	s.mux.HandleFunc("GET /ui/logs/{namespace}/{pod}", s.stream(s.logs))
	s.mux.HandleFunc("/ui", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
	})
}

// ServeHTTP sets the headers every answer carries, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	s.mux.ServeHTTP(w, r)
}

func (s *Server) serveStatic(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	if strings.HasSuffix(r.URL.Path, ".html") {
		http.NotFound(w, r)
		return
	}
	s.static.ServeHTTP(w, r)
}

// view is what every page template gets.
type view struct {
	Title string
	User  string
	CSRF  string
	// Nav marks the current section in the header.
	Nav string
	// Stream is the path of the page's change stream; RV the store
	// revision the page was read at, from which the stream watches.
	Stream string
	RV     string
	// Errors are the API's answers the page could not do without, shown
	// in it rather than instead of it.
	Errors []string
	Data   any
}

func (v *view) apiError(what string, err error) {
	if err == nil {
		return
	}
	v.Errors = append(v.Errors, what+": "+errorText(err))
}

// seen keeps the highest revision of the lists a page read.
func (v *view) seen(rv string) {
	if len(rv) > len(v.RV) || len(rv) == len(v.RV) && rv > v.RV {
		v.RV = rv
	}
}

// errorText is an API error as a viewer reads it: the Status message.
func errorText(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Message != "" {
		return se.Status().Message
	}
	return err.Error()
}

// page wraps a page's handler: a viewer without a session is sent to the
// login page, with the page to come back to.
func (s *Server) page(fn func(ctx context.Context, sess *session, r *http.Request, v *view) (string, int)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.sessions.get(r)
		if sess == nil {
			http.Redirect(w, r, Prefix+"login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		v := &view{User: sess.user, CSRF: sess.csrf}
		ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
		defer cancel()
		start := s.clock.Now()
		name, code := fn(ctx, sess, r, v)
		// How long the API's answers took, for a browser's timing panel.
		w.Header().Set("Server-Timing", fmt.Sprintf("api;dur=%.1f", float64(s.clock.Since(start).Microseconds())/1000))
		if v.Stream != "" && v.RV == "" {
			v.RV = "0"
		}
		s.render(w, name, code, v)
	}
}

// render writes a template whole or not at all: a template error is a
// 500 with a message, not half a page.
func (s *Server) render(w http.ResponseWriter, name string, code int, v any) {
	var buf bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&buf, name, v); err != nil {
		s.log.Error("ui: render", "template", name, "err", err)
		http.Error(w, "the page could not be drawn: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// action wraps a form's POST: it needs a session, a same-site request and
// the session's CSRF token in the form.
func (s *Server) action(fn func(w http.ResponseWriter, r *http.Request, sess *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.sessions.get(r)
		if sess == nil {
			http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if crossSite(r) || !sameToken(r.PostFormValue("csrf"), sess.csrf) {
			http.Error(w, "forbidden: the form's CSRF token is missing or wrong; reload the page and try again", http.StatusForbidden)
			return
		}
		fn(w, r, sess)
	}
}

// stream wraps a server-sent event stream: without a session it is a 401,
// since an EventSource cannot follow a login.
func (s *Server) stream(fn func(w http.ResponseWriter, r *http.Request, sess *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.sessions.get(r)
		if sess == nil {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			http.Error(w, "unauthorized: log in at "+Prefix+"login", http.StatusUnauthorized)
			return
		}
		fn(w, r, sess)
	}
}

// safeNext is the page a login returns to: a path of the dashboard, never
// another site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.HasPrefix(next, Prefix+"login") || strings.ContainsAny(next, "\\\r\n\t") {
		return Prefix
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, Prefix) || strings.Contains(u.Path, "/../") || strings.Contains(u.Path, "//") {
		return Prefix
	}
	return u.RequestURI()
}

type loginView struct {
	Title string
	Next  string
	CSRF  string
	Error string
	User  string
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if s.sessions.get(r) != nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s.showLogin(w, next, "", http.StatusOK)
}

// showLogin draws the login form with a fresh token, which the form
// echoes and a cookie holds (login CSRF: no other site can log a
// viewer in as someone else).
func (s *Server) showLogin(w http.ResponseWriter, next, msg string, code int) {
	tok := randomID()
	setCookie(w, loginCookie, tok, Prefix+"login", 600)
	s.render(w, "login", code, &loginView{Title: "Log in", Next: next, CSRF: tok, Error: msg})
}

// maxTokenBytes bounds a pasted token.
const maxTokenBytes = 16 << 10

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 2*maxTokenBytes)
	if err := r.ParseForm(); err != nil {
		s.showLogin(w, Prefix, "the form could not be read: "+err.Error(), http.StatusBadRequest)
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	c, err := r.Cookie(loginCookie)
	if err != nil || crossSite(r) || !sameToken(c.Value, r.PostForm.Get("csrf")) {
		s.showLogin(w, next, "the login form expired; try again", http.StatusForbidden)
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	if token == "" || len(token) > maxTokenBytes || strings.ContainsAny(token, " \t\r\n") {
		s.showLogin(w, next, "paste a bearer token: one line, as a kubeconfig's token", http.StatusBadRequest)
		return
	}
	cl, err := client.New(&client.Config{Server: s.cfg.API, Token: token, Transport: s.cfg.Transport, UserAgent: "berth-ui", Clock: s.clock})
	if err != nil {
		s.showLogin(w, next, err.Error(), http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	user, err := whoAmI(ctx, cl)
	if err != nil {
		code := http.StatusBadGateway
		msg := "the API did not answer: " + errorText(err)
		if client.IsUnauthorized(err) {
			code, msg = http.StatusUnauthorized, "the API does not accept this token"
		}
		s.showLogin(w, next, msg, code)
		return
	}
	sess := s.sessions.add(user, cl)
	setCookie(w, loginCookie, "", Prefix+"login", -1)
	setCookie(w, sessionCookie, sess.id, Prefix, int(MaxAge/time.Second))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// whoAmI asks the API who a token is (a SelfSubjectReview), which also
// proves the API accepts it.
func whoAmI(ctx context.Context, c *client.Client) (string, error) {
	body := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	resp, err := c.Do(ctx, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", nil, body, "application/json")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&review); err != nil {
		return "", fmt.Errorf("read the SelfSubjectReview: %w", err)
	}
	if review.Status.UserInfo.Username == "" {
		return "", errors.New("the SelfSubjectReview names no user")
	}
	return review.Status.UserInfo.Username, nil
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, sess *session) {
	s.sessions.remove(sess.id)
	setCookie(w, sessionCookie, "", Prefix, -1)
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}
