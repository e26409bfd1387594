package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// cookieName is the session cookie: it holds a random session id, never
// the token.
const cookieName = "agentos_console"

// session is one logged-in browser.
type session struct {
	id   string
	csrf string
	who  Principal
	seen time.Time
}

// sessions are the console's sessions, by id.
type sessions struct {
	mu  sync.Mutex
	ttl time.Duration
	m   map[string]*session
}

func newSessions(ttl time.Duration) *sessions {
	return &sessions{ttl: ttl, m: map[string]*session{}}
}

// add makes a session for who.
func (ss *sessions) add(who Principal) *session {
	s := &session{id: randomID(), csrf: randomID(), who: who, seen: time.Now()}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for id, o := range ss.m { // drop the idle ones while here
		if time.Since(o.seen) > ss.ttl {
			delete(ss.m, id)
		}
	}
	ss.m[s.id] = s
	return s
}

// get returns the live session id, touching it.
func (ss *sessions) get(id string) (*session, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[id]
	if !ok {
		return nil, false
	}
	now := time.Now()
	if now.Sub(s.seen) > ss.ttl || (!s.who.Expires.IsZero() && now.After(s.who.Expires)) {
		delete(ss.m, id)
		return nil, false
	}
	s.seen = now
	return s, true
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	delete(ss.m, id)
	ss.mu.Unlock()
}

func (ss *sessions) clear() {
	ss.mu.Lock()
	clear(ss.m)
	ss.mu.Unlock()
}

// randomID is 32 random bytes, URL-safe.
func randomID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

type sessionKey struct{}

// sessionOf is the request's session (set by page and action).
func sessionOf(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

// current returns the request's session: its cookie's, or an anonymous
// one when the console is served anonymously. ok is false when the
// request must log in.
func (s *Server) current(w http.ResponseWriter, r *http.Request) (*session, bool) {
	if c, err := r.Cookie(cookieName); err == nil {
		if ss, ok := s.sessions.get(c.Value); ok {
			if err := s.b.Verify(r.Context(), ss.who); err == nil {
				return ss, true
			}
			s.sessions.remove(ss.id)
		}
	}
	if !s.opts.Anonymous {
		return nil, false
	}
	who, err := s.b.Anonymous(r.Context())
	if err != nil {
		s.log.Warn("console: no anonymous principal", "err", err)
		return nil, false
	}
	ss := s.sessions.add(who)
	s.setCookie(w, ss.id)
	return ss, true
}

// page wraps a read: a request without a session goes to the login page.
func (s *Server) page(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ss, ok := s.current(w, r)
		if !ok {
			s.toLogin(w, r)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, ss)))
	})
}

// action wraps a state change: a POST of a session, from the console's
// own origin, carrying the session's CSRF token; anything else is 403.
func (s *Server) action(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := crossOrigin(r); err != nil {
			s.fail(w, r, http.StatusForbidden, err)
			return
		}
		ss, ok := s.current(w, r)
		if !ok {
			s.fail(w, r, http.StatusUnauthorized, errors.New("no session: log in with a capability token first"))
			return
		}
		got := r.PostFormValue("csrf")
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(ss.csrf)) != 1 {
			s.fail(w, r, http.StatusForbidden, errors.New("the form's CSRF token is missing or wrong: reload the page and submit it again"))
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, ss)))
	})
}

// crossOrigin refuses a request another site's page made: its
// Sec-Fetch-Site (browsers send it) or its Origin MUST be the console's.
func crossOrigin(r *http.Request) error {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return errors.New("a request from another site (Sec-Fetch-Site) is refused: use the console's own pages")
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return errors.New("a request from another origin is refused: use the console's own pages")
		}
	} else if o == "null" {
		return errors.New("a request from an opaque origin is refused: use the console's own pages")
	}
	return nil
}

// toLogin sends a browser to the login page (a stream or a script gets
// 401).
func (s *Server) toLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		http.Error(w, "no session: log in with a capability token at /login", http.StatusUnauthorized)
		return
	}
	http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
}

func (s *Server) setCookie(w http.ResponseWriter, id string) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: id, Path: "/", HttpOnly: true,
		Secure: s.secure, SameSite: http.SameSiteStrictMode,
	})
}

// loginView is the login page's data.
type loginView struct {
	Next, Error string
	Anonymous   bool
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "login.html", loginView{Next: safeNext(r.URL.Query().Get("next")), Anonymous: s.opts.Anonymous})
}

// login verifies the posted token and opens a session. The login form
// needs no session, so it is checked for its origin only.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if err := crossOrigin(r); err != nil {
		s.fail(w, r, http.StatusForbidden, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	tok := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	if tok == "" {
		s.render(w, r, http.StatusBadRequest, "login.html", loginView{Next: next, Error: "paste a capability token of this node ('agentos token' mints one)"})
		return
	}
	who, err := s.b.Login(r.Context(), tok)
	if err != nil {
		s.render(w, r, http.StatusUnauthorized, "login.html", loginView{Next: next, Error: err.Error()})
		return
	}
	ss := s.sessions.add(who)
	s.setCookie(w, ss.id)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	s.sessions.remove(sessionOf(r.Context()).id)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect target on the console: a path, never another
// host.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/runs"
	}
	return next
}
