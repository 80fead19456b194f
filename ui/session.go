package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/client"
)

// Cookie names. The session cookie holds an opaque id, never the token.
const (
	sessionCookie = "berth_session"
	loginCookie   = "berth_login"
)

// Session lifetimes: a session unused for IdleTimeout, or older than
// MaxAge, is gone and the viewer logs in again.
const (
	IdleTimeout = time.Hour
	MaxAge      = 12 * time.Hour
)

// maxSessions bounds the sessions kept at once; a login beyond it drops
// the least recently used.
const maxSessions = 10000

// session is one logged-in viewer: the client that carries their token,
// the name the API knows them by, and the token every form must echo.
type session struct {
	id      string
	user    string
	csrf    string
	client  *client.Client
	created time.Time
	used    time.Time
}

// sessions are kept in memory: a restart of the server logs every viewer
// out, which is what an opaque session id costs.
type sessions struct {
	mu    sync.Mutex
	clock clock.Clock
	byID  map[string]*session
}

func newSessions(clk clock.Clock) *sessions {
	return &sessions{clock: clk, byID: map[string]*session{}}
}

// randomID is 32 random bytes, URL-safe.
func randomID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	return base64.RawURLEncoding.EncodeToString(b)
}

func (ss *sessions) add(user string, c *client.Client) *session {
	now := ss.clock.Now()
	s := &session{id: randomID(), user: user, csrf: randomID(), client: c, created: now, used: now}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for id, o := range ss.byID {
		if ss.expired(o, now) {
			delete(ss.byID, id)
		}
	}
	if len(ss.byID) >= maxSessions {
		var oldest *session
		for _, o := range ss.byID {
			if oldest == nil || o.used.Before(oldest.used) {
				oldest = o
			}
		}
		delete(ss.byID, oldest.id)
	}
	ss.byID[s.id] = s
	return s
}

func (ss *sessions) expired(s *session, now time.Time) bool {
	return now.Sub(s.used) > IdleTimeout || now.Sub(s.created) > MaxAge
}

// get finds the live session of a request's cookie and marks it used.
func (ss *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	now := ss.clock.Now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.byID[c.Value]
	if s == nil {
		return nil
	}
	if ss.expired(s, now) {
		delete(ss.byID, s.id)
		return nil
	}
	s.used = now
	return s
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byID, id)
}

func (ss *sessions) count() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.byID)
}

// setCookie writes a cookie scripts cannot read, sent only over TLS and
// only by pages of the dashboard's own origin.
func setCookie(w http.ResponseWriter, name, value, path string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode,
	})
}

// sameToken compares two tokens in constant time; an empty one matches
// nothing.
func sameToken(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// crossSite tells a request a browser marked as coming from another site
// (Sec-Fetch-Site), which no action of the dashboard accepts whatever its
// token.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return false
	}
	return true
}
