package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/kernel/proc"
	"github.com/agentos-run/agentos/capability"
)

// Path is where HTTPHandler serves MCP (streamable HTTP).
const Path = "/mcp"

// DefaultSessionTimeout is how long an idle HTTP session lives when
// HTTPOptions.SessionTimeout is 0.
const DefaultSessionTimeout = 30 * time.Minute

// DefaultMaxSessions is how many HTTP sessions a token may hold open at
// once when HTTPOptions.MaxSessions is 0.
const DefaultMaxSessions = 16

// HTTPOptions configure HTTPHandler. The zero value refuses requests
// without a token, closes sessions idle for DefaultSessionTimeout and
// allows DefaultMaxSessions sessions per token.
type HTTPOptions struct {
	// Anonymous, when set, is the process a request without a token runs
	// as (mcp.serve.allow_anonymous: the default process). nil: such a
	// request is answered 401. IMPORTANT: the nil interface, not a nil
	// *kernel.Process, means none.
	Anonymous proc.Process
	// Quota limits the account of each process a token makes (e.g. the
	// agent.quota of agentos.json); absent meters are limited only by the
	// node's quota.
	Quota capability.Limits
	// SessionTimeout closes a session that received no request for this
	// long (0: DefaultSessionTimeout; negative: never); its client must
	// initialize again.
	SessionTimeout time.Duration
	// MaxSessions is how many sessions one token (and all anonymous
	// clients together) may hold open at once (0: DefaultMaxSessions;
	// negative: no limit). An initialize at the limit closes the token's
	// least recently used idle session (its client must initialize
	// again); when each has a request under way it is answered 429.
	MaxSessions int
}

// ident is who an authenticated HTTP request is: the process it runs as,
// and the user id the SDK ties its session to.
type ident struct {
	p       proc.Process
	user    string    // "tok:<token id>" or "anon"
	expires time.Time // the token's earliest NotAfter (zero: none)
}

type identKey struct{}

// anonymousUser is the session owner of the requests without a token.
const anonymousUser = "anon"

// sessionLimits are the session timeout (0: never, the SDK's value for
// it) and the cap on a token's sessions that opts give, with the defaults
// for the zero values.
func (opts HTTPOptions) sessionLimits() (timeout time.Duration, maxSessions int) {
	timeout, maxSessions = opts.SessionTimeout, opts.MaxSessions
	if timeout == 0 {
		timeout = DefaultSessionTimeout
	} else if timeout < 0 {
		timeout = 0 // the SDK's "never"
	}
	if maxSessions == 0 {
		maxSessions = DefaultMaxSessions
	}
	return timeout, maxSessions
}

// serverForRequest is the MCP server of the process the request was
// authenticated as, or nil (the SDK then answers 400).
func (s *Server) serverForRequest(r *http.Request) *mcp.Server {
	id, _ := r.Context().Value(identKey{}).(ident)
	if id.p == nil {
		return nil
	}
	srv, err := s.For(id.p)
	if err != nil {
		s.log.Warn("mcp: no server for the request", "pid", id.p.PID(), "err", err)
		return nil
	}
	return srv
}

// unauthorized answers a request whose token is missing or refused: 401
// with a Bearer challenge (naming invalid_token for a refused one; RFC
// 6750 names none for a missing token) and what to do.
func unauthorized(w http.ResponseWriter, err error) {
	challenge := `Bearer realm="agentos"`
	if errors.Is(err, ErrBadToken) {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	httpError(w, http.StatusUnauthorized, err.Error())
}

// HTTPHandler serves MCP over streamable HTTP at Path. Every request MUST
// carry "Authorization: Bearer <token>", a capability token of this node
// (capability.Token.Encode; `agentos token` mints one): it is verified
// with the kernel's authority (signature, revocation, expiry) on every
// request, and the session runs as the process made for that token on its
// first use, whose own token is delegated from it (kernel.SpawnOptions.From):
// the same grants and every caveat of it (expiry, MaxUses), so the process
// can never do more than the token allows, and revoking the token ends its
// rights. The token's Holder is a label ('agentos token --holder') that is
// NOT checked: over HTTP a token is a bearer token, whoever presents it
// holds it. Keep it secret.
//
// A session opened with one token MUST NOT be used with another, nor
// without one: the SDK checks each request's owner (auth.TokenInfo.UserID,
// "tok:<token id>", or "anon" for the requests without a token) against
// the session's, atomically with its lookup, and answers 403. A missing
// token (unless opts.Anonymous is set) or a refused one is answered 401
// with WWW-Authenticate: Bearer and a JSON {"error": "..."} saying what to
// do; an initialize at opts.MaxSessions closes the token's least recently
// used idle session, or is answered 429 when none is idle.
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler {
	timeout, maxSessions := opts.sessionLimits()
	// The SDK records the TokenInfo's UserID with a new session and
	// refuses a request of another user for it; the request was
	// authenticated already, so the verifier only hands its identity over.
	withOwner := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		id, ok := ctx.Value(identKey{}).(ident)
		if !ok {
			return nil, fmt.Errorf("%w: the request was not authenticated", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: id.user, Expiration: id.expires}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	owned := withOwner(mcp.NewStreamableHTTPHandler(s.serverForRequest, &mcp.StreamableHTTPOptions{Logger: s.log, SessionTimeout: timeout}))
	// Stateless (MCP 2026-07-28): no initialize, no Mcp-Session-Id; each
	// request is whole in itself, so any node of a cluster answers it.
	stateless := withOwner(mcp.NewStreamableHTTPHandler(s.serverForRequest, &mcp.StreamableHTTPOptions{Logger: s.log, Stateless: true}))
	// A web page MUST NOT reach a node on loopback through its visitor's
	// browser: cross-origin requests are refused (the SDK refuses DNS
	// rebinding, a localhost address reached under another host name).
	cop := http.NewCrossOriginProtection()
	mux := http.NewServeMux()
	mux.Handle(Path, cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// DNS rebinding: a loopback listener answers only loopback Host
		// names, before anything else (the SDK's handlers check this too,
		// but the tasks path answers without them).
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(fmt.Stringer); ok && loopbackHost(local.String()) && !loopbackHost(r.Host) {
			httpError(w, http.StatusForbidden, fmt.Sprintf("invalid Host header %q: this endpoint listens on loopback and answers only loopback names (DNS rebinding protection)", r.Host))
			return
		}
		id, err := s.authenticate(r, opts)
		if err != nil {
			unauthorized(w, err)
			return
		}
		var body []byte
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			// The body is read first: a slow client holds no one else's
			// initialize up.
			var err error
			body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, mcp.DefaultMaxRequestBodyBytes))
			if err != nil {
				httpError(w, http.StatusRequestEntityTooLarge, "the request body cannot be read: "+err.Error())
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		r = r.WithContext(context.WithValue(r.Context(), identKey{}, id))
		if id.user == anonymousUser {
			// RequireBearerToken wants a bearer token to hand to the
			// verifier, which ignores it.
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer anonymous")
		}
		if body != nil && isStateless(r, body) {
			if s.serveTask(w, r, id, body) {
				return
			}
			stateless.ServeHTTP(w, r)
			return
		}
		if body != nil && maxSessions >= 0 {
			// A new session: the token's initializes go one at a time, so
			// that its sessions are counted exactly (when the request is
			// answered, its session is listed or closed).
			release, err := s.admitSession(r.Context(), id.p, maxSessions)
			if err != nil {
				httpError(w, http.StatusTooManyRequests, err.Error())
				return
			}
			defer release()
		}
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			// Its idle time decides which session makes room
			// (admitSession). A GET (the client's standing stream) is
			// a use, not a request under way.
			switch r.Method {
			case http.MethodGet:
				s.uses.touch(sid)
			case http.MethodDelete:
				defer s.uses.forget(sid)
			default:
				defer s.uses.begin(sid)()
			}
		}
		owned.ServeHTTP(w, r)
	})))
	return mux
}

// loopbackHost reports whether hostport (a Host header or a listener's
// address, with or without a port) names "localhost" or a loopback IP.
func loopbackHost(hostport string) bool {
	if ap, err := netip.ParseAddrPort(hostport); err == nil {
		return ap.Addr().Unmap().IsLoopback()
	}
	host := hostport
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.Contains(hostport[:i], ":") {
		host = hostport[:i] // name:port (a bare IPv6 address has colons before its last)
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// statelessVersion is the first protocol version served without sessions.
const statelessVersion = "2026-07-28"

// isStateless reports whether the POST r (without Mcp-Session-Id, its body
// read) is served statelessly: a request of protocol 2026-07-28 or later
// (its Mcp-Protocol-Version header), or any message but an initialize (a
// client of an older version that sends no session: each request answered
// on its own). An initialize of an older client opens a session as before
// (2025-11-25 and older: its server-to-client requests, its GET stream).
func isStateless(r *http.Request, body []byte) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= statelessVersion {
		return true
	}
	var msg struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false // a batch, or not JSON: the SDK says what is wrong
	}
	return msg.Method != "initialize"
}

// httpError answers code with a JSON {"error": msg}.
func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// admitSession waits for p's turn to open a session and checks p's open
// sessions against limit; release ends the turn once the new session is
// listed (or closed): after the initialize request was answered.
func (s *Server) admitSession(ctx context.Context, p proc.Process, limit int) (release func(), err error) {
	s.mu.Lock()
	gate, ok := s.opening[p.PID()]
	if !ok {
		gate = make(chan struct{}, 1)
		s.opening[p.PID()] = gate
	}
	s.mu.Unlock()
	select {
	case gate <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: the client went away waiting to open a session", ErrTooManySessions)
	}
	var sessions []*mcp.ServerSession
	s.mu.Lock()
	if b, ok := s.bound[p.PID()]; ok {
		for ss := range b.srv.Sessions() {
			// Only sessions a client opened count: a stateless
			// request's and a task's in-memory sessions have no id, are
			// no client's to close, and MUST NOT be evicted.
			if ss.ID() != "" {
				sessions = append(sessions, ss)
			}
		}
	}
	s.mu.Unlock()
	if n := len(sessions); n >= limit {
		// Most clients never close their sessions: the least recently
		// used idle one makes room, the bound stays hard.
		if n > limit || !s.evictIdle(sessions, limit) {
			<-gate
			return nil, fmt.Errorf("%w: this token already has %d open MCP sessions, the limit, and each has a request under way; close one (HTTP DELETE of its Mcp-Session-Id, or end its client) or retry when one is idle", ErrTooManySessions, n)
		}
	}
	return func() { <-gate }, nil
}

// authenticate returns who r is.
func (s *Server) authenticate(r *http.Request, opts HTTPOptions) (ident, error) {
	header := r.Header.Get("Authorization")
	if header == "" {
		if opts.Anonymous != nil {
			return ident{p: opts.Anonymous, user: anonymousUser}, nil
		}
		return ident{}, fmt.Errorf("%w: this node's MCP endpoint needs \"Authorization: Bearer <token>\" with a capability token of the node; mint one with 'agentos token --grant exec:tools/ ...' (with capability.signing_key_env set), or set mcp.serve.allow_anonymous in agentos.json to serve the default process without one", ErrNoToken)
	}
	enc, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || strings.TrimSpace(enc) == "" {
		return ident{}, fmt.Errorf("%w: the Authorization header must be \"Bearer <token>\"", ErrBadToken)
	}
	tok, err := capability.Decode(strings.TrimSpace(enc))
	if err != nil {
		return ident{}, fmt.Errorf("%w: %w; pass the token 'agentos token' printed, whole", ErrBadToken, err)
	}
	k := s.opts.Node.Processes()
	if err := k.Authority().Verify(tok); err != nil {
		return ident{}, fmt.Errorf("%w: %w; mint a new one with 'agentos token' (tokens verify only on nodes with the same capability.signing_key_env)", ErrBadToken, err)
	}
	p, err := s.processFor(tok, opts)
	if err != nil {
		return ident{}, err
	}
	var notAfter time.Time
	for _, c := range tok.Caveats {
		if !c.NotAfter.IsZero() && (notAfter.IsZero() || c.NotAfter.Before(notAfter)) {
			notAfter = c.NotAfter
		}
	}
	return ident{p: p, user: "tok:" + tok.ID, expires: notAfter}, nil
}

// processFor returns the process of tok, spawned on first use with a token
// delegated from tok.
func (s *Server) processFor(tok capability.Token, opts HTTPOptions) (proc.Process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if p, ok := s.byToken[tok.ID]; ok {
		why, ended := p.Reason()
		if !ended {
			return p, nil
		}
		if usesLimited(tok) {
			// A new process would start counting the token's uses over.
			return nil, fmt.Errorf("%w: token %s allows a limited number of uses (max_uses) and its process %v ended (%s): its uses do not start over; mint a new token with 'agentos token'", ErrBadToken, tok.ID, p.PID(), why.Kind)
		}
		s.dropEndedLocked() // its server and sessions: the token gets a new process
	}
	k := s.opts.Node.Processes()
	name := "mcp-" + tok.ID
	if pid, taken := k.Lookup(name); taken {
		// A process of this token's that ended is still leaving the table,
		// or another server of the node made one: use it while it lives,
		// and only if its token derives from this very token (anyone may
		// name a process mcp-<id>: the name proves nothing).
		if p, ok := k.Handle(pid); ok {
			if _, ended := p.Reason(); !ended && derivedFrom(p, tok.ID) {
				s.byToken[tok.ID] = p
				return p, nil
			}
		}
		s.log.Warn("mcp: a process holds the token's name without the token's grants; the token gets an unnamed process", "name", name, "pid", pid)
		name = ""
	}
	p, err := k.SpawnProcess(idle, proc.SpawnOptions{Name: name, Image: "mcp", From: &tok, Quota: opts.Quota})
	if err != nil {
		return nil, fmt.Errorf("%w: the token's process cannot start: %w", ErrBadToken, err)
	}
	s.byToken[tok.ID] = p
	s.spawned = append(s.spawned, p)
	return p, nil
}

// usesLimited reports whether tok carries a MaxUses caveat.
func usesLimited(tok capability.Token) bool {
	for _, c := range tok.Caveats {
		if c.MaxUses > 0 {
			return true
		}
	}
	return false
}

// derivedFrom reports whether p's token was delegated from the token id
// (its last ancestor).
func derivedFrom(p proc.Process, id string) bool {
	t, ok := p.Token()
	return ok && len(t.Chain) > 0 && t.Chain[len(t.Chain)-1] == id
}

// idle is the main of a token's process: its calls come from MCP, not
// from its mailbox, so it waits to be told to end.
func idle(ctx context.Context, p proc.Process) error {
	for {
		m, err := p.Recv(ctx)
		if err != nil {
			return nil
		}
		if _, ok := m.Body.(*proc.Term); ok {
			return nil
		}
	}
}
