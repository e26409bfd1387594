package mcpserver

import (
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTP sessions in use: most clients never close theirs (HTTP DELETE), so
// a token's sessions are not refused once they reach HTTPOptions.MaxSessions:
// the least recently used idle one is closed to admit the new one (its
// client gets 404 on its next request and initializes again, as the MCP
// specification says). IMPORTANT: the bound is hard: a session with a
// request under way (an open GET stream included) is never closed for
// another, and when every session of the token is busy an initialize is
// still answered 429. A standing GET stream is a use of its session, not a
// request under way: a client that keeps one open and sends nothing is
// idle.

// sessionUse is what is known of one HTTP session's use.
type sessionUse struct {
	last   time.Time // the end (or start) of its latest request
	active int       // its requests under way
}

// sessionUses tracks the use of the HTTP sessions by id (own lock).
type sessionUses struct {
	mu   sync.Mutex
	byID map[string]*sessionUse
}

// touch records a use of session id with no request under way.
func (u *sessionUses) touch(id string) {
	u.mu.Lock()
	u.get(id).last = time.Now()
	u.mu.Unlock()
}

// maxUses bounds the records kept: past it, those idle for longer than
// staleUse (their sessions timed out, or are the least recently used
// anyway) are dropped.
const (
	maxUses  = 4096
	staleUse = time.Hour
)

// get returns the record of session id, made on first use; u.mu is held.
func (u *sessionUses) get(id string) *sessionUse {
	if u.byID == nil {
		u.byID = map[string]*sessionUse{}
	}
	su, ok := u.byID[id]
	if !ok {
		if len(u.byID) >= maxUses {
			for k, v := range u.byID {
				if v.active == 0 && time.Since(v.last) > staleUse {
					delete(u.byID, k)
				}
			}
		}
		su = &sessionUse{}
		u.byID[id] = su
	}
	return su
}

// begin records that a request of session id started; the returned func
// records its end.
func (u *sessionUses) begin(id string) (end func()) {
	u.mu.Lock()
	su := u.get(id)
	su.active++
	su.last = time.Now()
	u.mu.Unlock()
	return func() {
		u.mu.Lock()
		su.active--
		su.last = time.Now()
		u.mu.Unlock()
	}
}

// leastRecentIdle returns the session of sessions that has no request
// under way and was used least recently (a session never used after its
// initialize first), or nil when every one is busy.
func (u *sessionUses) leastRecentIdle(sessions []*mcp.ServerSession) *mcp.ServerSession {
	u.mu.Lock()
	defer u.mu.Unlock()
	var (
		pick     *mcp.ServerSession
		pickLast time.Time
	)
	for _, ss := range sessions {
		if ss.ID() == "" {
			continue // a stateless request's or a task's: no client's to close
		}
		su := u.byID[ss.ID()]
		var last time.Time
		if su != nil {
			if su.active > 0 {
				continue
			}
			last = su.last
		}
		if pick == nil || last.Before(pickLast) {
			pick, pickLast = ss, last
		}
	}
	return pick
}

// forget drops what is known of session id (closed).
func (u *sessionUses) forget(id string) {
	u.mu.Lock()
	delete(u.byID, id)
	u.mu.Unlock()
}

// evictIdle closes the least recently used idle session of sessions to
// make room for a new one, and reports whether it did.
func (s *Server) evictIdle(sessions []*mcp.ServerSession, limit int) bool {
	ss := s.uses.leastRecentIdle(sessions)
	if ss == nil {
		return false
	}
	id := ss.ID()
	_ = ss.Close()
	s.uses.forget(id)
	s.log.Info("mcp: closed the token's least recently used idle session to open a new one (its client initializes again if it comes back)",
		slog.String("session", id), slog.Int("limit", limit))
	return true
}
