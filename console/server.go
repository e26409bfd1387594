package console

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Options configure a Server. The zero value serves with a login page only
// (no anonymous access), Secure cookies, sessions idle for DefaultSessionTTL.
type Options struct {
	// Addr is the address the console is served on ("127.0.0.1:8080"); it
	// decides whether Anonymous is allowed (loopback only) and whether
	// the cookie may go without Secure (plain HTTP on loopback).
	Addr string
	// TLS says the console is served over HTTPS.
	TLS bool
	// Anonymous serves requests without a session as Backend.Anonymous.
	// IMPORTANT: New refuses it unless Addr is a loopback address.
	Anonymous bool
	// SessionTTL ends a session idle this long (0: DefaultSessionTTL).
	SessionTTL time.Duration
	// Poll is how often the live streams look for new runs (0: one second).
	Poll time.Duration
	// Logger receives the console's warnings (nil: slog.Default()).
	Logger *slog.Logger
}

// DefaultSessionTTL is how long an idle session lives when
// Options.SessionTTL is 0.
const DefaultSessionTTL = 12 * time.Hour

// Server is the console: an http.Handler.
type Server struct {
	b        Backend
	opts     Options
	log      *slog.Logger
	mux      *http.ServeMux
	sessions *sessions
	secure   bool // the cookie's Secure attribute
	done     chan struct{}
	once     sync.Once
}

// New returns the console over b. It refuses Options.Anonymous on an
// address that is not loopback (ErrAnonymousNotLoopback).
func New(b Backend, opts Options) (*Server, error) {
	loop := LoopbackAddr(opts.Addr)
	if opts.Anonymous && !loop {
		return nil, fmt.Errorf("%w: %q is not a loopback address; serve the console on 127.0.0.1 to use it without a token, or log in with a capability token ('agentos token')", ErrAnonymousNotLoopback, opts.Addr)
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{b: b, opts: opts, log: log, mux: http.NewServeMux(), done: make(chan struct{})}
	s.secure = opts.TLS || !loop
	s.sessions = newSessions(opts.SessionTTL)
	for _, r := range s.routes() {
		s.mux.Handle(r.pattern, r.h)
	}
	return s, nil
}

// route is one pattern of the console's mux.
type route struct {
	pattern string
	h       http.Handler
}

// routes is every page of the console, one block per area. IMPORTANT:
// pages of a session go through s.page (read) or s.action (a POST that
// changes something: CSRF checked).
func (s *Server) routes() []route {
	rs := []route{
		{"GET /static/", staticHandler()},
		{"GET /login", http.HandlerFunc(s.loginPage)},
		{"POST /login", http.HandlerFunc(s.login)},
		{"POST /logout", s.action(s.logout)},
		{"GET /{$}", http.RedirectHandler("/runs", http.StatusSeeOther)},
	}
	rs = append(rs, s.runsRoutes()...)      // pages_runs.go, pages_debug.go
	rs = append(rs, s.toolsRoutes()...)     // pages_tools.go
	rs = append(rs, s.approvalsRoutes()...) // pages_approvals.go
	rs = append(rs, s.procsRoutes()...)     // pages_procs.go
	return rs
}

// ServeHTTP serves the console with its security headers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // no-referrer would make the browser send "Origin: null" with the forms
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if !s.sameHost(r) {
		http.Error(w, fmt.Sprintf("invalid Host header %q: this console listens on loopback and answers only loopback names (DNS rebinding protection)", r.Host), http.StatusForbidden)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// sameHost refuses, on a loopback listener, a Host that is not a loopback
// name (a DNS rebinding page reaching the console through its visitor).
func (s *Server) sameHost(r *http.Request) bool {
	if !LoopbackAddr(s.opts.Addr) {
		return true
	}
	return LoopbackAddr(r.Host)
}

// Close ends every session and live stream, and closes the Backend when
// it is an io.Closer.
func (s *Server) Close() error {
	s.once.Do(func() { close(s.done) })
	s.sessions.clear()
	if c, ok := s.b.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// LoopbackAddr reports whether hostport names a loopback address or
// "localhost" (with or without a port).
func LoopbackAddr(hostport string) bool {
	if ap, err := netip.ParseAddrPort(hostport); err == nil {
		return ap.Addr().Unmap().IsLoopback()
	}
	host := hostport
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.Contains(hostport[:i], ":") {
		host = hostport[:i]
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
