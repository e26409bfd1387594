package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
)

// Path is where HTTPHandler serves MCP (streamable HTTP).
const Path = "/mcp"

// HTTPOptions configure HTTPHandler. The zero value refuses requests
// without a token.
type HTTPOptions struct {
	// Anonymous, when set, is the process a request without a token runs
	// as (mcp.serve.allow_anonymous: the default process). nil: such a
	// request is answered 401.
	Anonymous *kernel.Process
	// Quota limits the account of each process a token makes (e.g. the
	// agent.quota of agentos.json); absent meters are limited only by the
	// node's quota.
	Quota capability.Limits
}

type procKey struct{}

// HTTPHandler serves MCP over streamable HTTP at Path. Every request MUST
// carry "Authorization: Bearer <token>", a capability token of this node
// (capability.Token.Encode; `agentos token` mints one): it is verified
// with the kernel's authority (signature, revocation, expiry) on every
// request, and the session runs as the process made for that token on its
// first use, with the token's grants, its earliest expiry and
// opts.Quota. A session opened with one token MUST NOT be used with
// another: such a request is answered 403. A missing token (unless
// opts.Anonymous is set) or a refused one is answered 401 with
// WWW-Authenticate: Bearer and a JSON {"error": "..."} saying what to do.
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		p, _ := r.Context().Value(procKey{}).(*kernel.Process)
		if p == nil {
			return nil
		}
		srv, err := s.For(p)
		if err != nil {
			s.log.Warn("mcp: no server for the request", "pid", p.PID(), "err", err)
			return nil
		}
		return srv
	}, &mcp.StreamableHTTPOptions{Logger: s.log})
	// A web page MUST NOT reach a node on loopback through its visitor's
	// browser: cross-origin requests are refused (the SDK refuses DNS
	// rebinding, a localhost address reached under another host name).
	cop := http.NewCrossOriginProtection()
	mux := http.NewServeMux()
	mux.Handle(Path, cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r, opts)
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			challenge := `Bearer realm="agentos"`
			if errors.Is(err, ErrBadToken) {
				challenge += `, error="invalid_token"` // RFC 6750: none for a missing token
			}
			w.Header().Set("WWW-Authenticate", challenge)
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			if owner, ok := s.sessionOf(sid); ok && owner != p.PID() {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_ = json.NewEncoder(w).Encode(map[string]string{"error": "this MCP session was opened with another capability token: open a session of your own (initialize) with yours"})
				return
			}
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), procKey{}, p)))
	})))
	return mux
}

// authenticate returns the process r runs as.
func (s *Server) authenticate(r *http.Request, opts HTTPOptions) (*kernel.Process, error) {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		if opts.Anonymous != nil {
			return opts.Anonymous, nil
		}
		return nil, fmt.Errorf("%w: this node's MCP endpoint needs \"Authorization: Bearer <token>\" with a capability token of the node; mint one with 'agentos token --grant exec:tools/ ...' (with capability.signing_key_env set), or set mcp.serve.allow_anonymous in agentos.json to serve the default process without one", ErrNoToken)
	}
	enc, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.TrimSpace(enc) == "" {
		return nil, fmt.Errorf("%w: the Authorization header must be \"Bearer <token>\"", ErrBadToken)
	}
	tok, err := capability.Decode(strings.TrimSpace(enc))
	if err != nil {
		return nil, fmt.Errorf("%w: %w; pass the token 'agentos token' printed, whole", ErrBadToken, err)
	}
	k := s.opts.Node.Kernel()
	if err := k.Authority().Verify(tok); err != nil {
		return nil, fmt.Errorf("%w: %w; mint a new one with 'agentos token' (tokens verify only on nodes with the same capability.signing_key_env)", ErrBadToken, err)
	}
	return s.processFor(tok, opts)
}

// processFor returns the process of tok, spawned on first use.
func (s *Server) processFor(tok capability.Token, opts HTTPOptions) (*kernel.Process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if p, ok := s.byToken[tok.ID]; ok {
		if _, ended := p.Reason(); !ended {
			return p, nil
		}
		s.dropEndedLocked() // its server and sessions: the token gets a new process
	}
	var notAfter time.Time
	for _, c := range tok.Caveats {
		if !c.NotAfter.IsZero() && (notAfter.IsZero() || c.NotAfter.Before(notAfter)) {
			notAfter = c.NotAfter
		}
	}
	k := s.opts.Node.Kernel()
	name := "mcp-" + tok.ID
	if pid, taken := k.Lookup(name); taken {
		// A process of this token's that ended is still leaving the table,
		// or another server of the node made one: use it while it lives.
		if p := k.Process(pid); p != nil {
			if _, ended := p.Reason(); !ended {
				s.byToken[tok.ID] = p
				return p, nil
			}
		}
		name = ""
	}
	p, err := k.Spawn(idle, kernel.SpawnOptions{
		Name: name, Image: "mcp", Grants: tok.Grants,
		Caveats: capability.Caveats{NotAfter: notAfter}, Quota: opts.Quota,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: the token's process cannot start: %w", ErrBadToken, err)
	}
	s.byToken[tok.ID] = p
	s.spawned = append(s.spawned, p)
	return p, nil
}

// idle is the main of a token's process: its calls come from MCP, not
// from its mailbox, so it waits to be told to end.
func idle(ctx context.Context, p *kernel.Process) error {
	for {
		m, err := p.Recv(ctx)
		if err != nil {
			return nil
		}
		if _, ok := m.Body.(*kernel.Term); ok {
			return nil
		}
	}
}
