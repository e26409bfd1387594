package host

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/capability"
)

// RevocationsFile keeps the tool root's durable revocations ('agentos token
// revoke', Runtime.Revoke, and those other nodes of its cluster made) and
// the tokens 'agentos token' minted for it ('agentos token list'): a
// capability.RevocationFile in the root's state directory.
var RevocationsFile = filepath.Join(StateDir, "revocations.db")

// ErrUnknownToken: nothing in this tool root or node knows the token id or
// holder a revocation names (see RevokeRequest.Force).
var ErrUnknownToken = errors.New("agentos: unknown token")

// RevokeRequest names what to revoke ('agentos token revoke').
type RevokeRequest struct {
	// Target is a token id (24 hexadecimal digits), a holder's name (every
	// token issued to it until now), or a token itself (its id).
	Target string `json:"target"`
	// Holder reads Target as a holder's name even when it looks like an id.
	Holder bool `json:"holder,omitempty"`
	// Force revokes a Target nothing here knows (a token minted in another
	// tool root or on another node with the same key); without it such a
	// Target is refused (ErrUnknownToken), so that a mistyped id is not
	// taken for a revocation.
	Force bool `json:"force,omitempty"`
}

// RevokeReport says what a revocation did.
type RevokeReport struct {
	// ID is the revoked token's id ("" when a holder was revoked).
	ID string `json:"id,omitempty"`
	// Holder is the revoked holder (every token issued to it until At).
	Holder string `json:"holder,omitempty"`
	// At is when it was revoked (the revoking node's clock).
	At time.Time `json:"at"`
	// Known says how this root knew the target ("" when forced).
	Known string `json:"known,omitempty"`
	// Durable: kept in RevocationsFile, so it outlives the node (false on a
	// node without capability.signing_key_env, whose tokens die with it).
	Durable bool `json:"durable"`
	// Node: made on a running node, so in force there at once and
	// published to its cluster; false when made offline (in force when a
	// node of the root starts).
	Node bool `json:"node"`
}

// Revoke revokes a capability token, or every token of a holder, on this
// running node: any token signed with the node's key, wherever it was
// minted ('agentos token', an MCP bearer token, a process's token), and
// every token derived from it. It is in force here at once, kept in
// RevocationsFile (it outlives restarts) and published to the node's
// cluster, whose nodes keep it too; a node that was down catches up when
// it rejoins (docs/SECURITY.md states the bounds).
func (rt *Runtime) Revoke(req RevokeRequest) (RevokeReport, error) {
	rep, err := revoke(rt.Kernel().Authority(), capability.RevocationFile(filepath.Join(rt.root, RevocationsFile)), req)
	rep.Node = true
	if rt.cfg.Capability.SigningKeyEnv == "" {
		rep.Durable = false // no store: this node's tokens die with it
	}
	return rep, err
}

// Revoke is Runtime.Revoke with no node running: the revocation is kept in
// cfg's root (RevocationsFile) and in force from the next start of a node
// there, which publishes it to its cluster. IMPORTANT: while a node serves
// the root, revoke through it (Runtime.Revoke, the admin socket) instead:
// offline, the running node would not know until it restarts. It needs
// capability.signing_key_env (without it tokens die with their node).
func Revoke(cfg Config, req RevokeRequest) (RevokeReport, error) {
	key, err := cfg.CapabilityKey()
	if err != nil {
		return RevokeReport{}, err
	}
	if key == nil {
		return RevokeReport{}, fmt.Errorf("agentos: this tool root has no capability.signing_key_env, so its tokens are valid only in the node that minted them, until it stops: revoke through the running node ('agentos token revoke' while 'agentos serve' runs), or stop it")
	}
	root := cfg.Root
	if root == "" {
		root = "."
	}
	store := capability.RevocationFile(filepath.Join(root, RevocationsFile))
	auth, err := capability.New(capability.Options{Key: key, Store: store})
	if err != nil {
		return RevokeReport{}, err
	}
	return revoke(auth, store, req)
}

// revoke resolves req against what auth and the root's file know, and
// revokes.
func revoke(auth *capability.Authority, file capability.RevocationFile, req RevokeRequest) (RevokeReport, error) {
	target := strings.TrimSpace(req.Target)
	if target == "" {
		return RevokeReport{}, fmt.Errorf("agentos: name what to revoke: a token id (24 hexadecimal digits, see 'agentos token list'), a holder, or the token itself")
	}
	minted, err := file.Minted()
	if err != nil {
		return RevokeReport{}, err
	}
	var rep RevokeReport
	switch tok, isToken := tokenOf(auth, target); {
	case isToken && !req.Holder:
		rep.ID, rep.Known = tok.ID, "the token given (held by "+tok.Holder+")"
	case !req.Holder && capability.IsTokenID(target):
		rep.ID, rep.Known = target, knownID(auth, minted, target)
		if rep.Known == "" && !req.Force {
			return RevokeReport{}, fmt.Errorf("%w: no token with id %s was minted in this tool root ('agentos token list') or is held by a process of this node; if another root or node minted it with the same signing key, pass --force to revoke it anyway", ErrUnknownToken, target)
		}
	default:
		rep.Holder, rep.Known = target, knownHolder(auth, minted, target)
		if rep.Known == "" && !req.Force {
			return RevokeReport{}, fmt.Errorf("%w: no token was minted for holder %s in this tool root ('agentos token list') and no process of this node holds one (a token id is 24 hexadecimal digits); if another root or node minted it with the same signing key, pass --force to revoke its tokens anyway", ErrUnknownToken, clipName(target))
		}
	}
	var r capability.Revocation
	if rep.ID != "" {
		r, err = auth.RevokeToken(rep.ID)
	} else {
		r, err = auth.RevokeIssuedTo(rep.Holder)
	}
	rep.At, rep.Durable = r.At, err == nil
	if err != nil && r.At.IsZero() {
		return RevokeReport{}, fmt.Errorf("agentos: %w", err)
	}
	if err != nil {
		return rep, fmt.Errorf("agentos: %w", err)
	}
	return rep, nil
}

// tokenOf decodes target as a token signed with auth's key (revoked or
// expired ones included).
func tokenOf(auth *capability.Authority, target string) (capability.Token, bool) {
	if len(target) < 64 {
		return capability.Token{}, false
	}
	tok, err := capability.Decode(target)
	if err != nil || tok.ID == "" {
		return capability.Token{}, false
	}
	if err := auth.Verify(tok); errors.Is(err, capability.ErrInvalid) {
		return capability.Token{}, false
	}
	return tok, true
}

func knownID(auth *capability.Authority, minted []capability.Minted, id string) string {
	if i := slices.IndexFunc(minted, func(m capability.Minted) bool { return m.ID == id }); i >= 0 {
		return "minted in this tool root for " + minted[i].Holder
	}
	if auth.Issued(id) {
		return "held by a process of this node"
	}
	if slices.ContainsFunc(auth.Revoked(), func(r capability.Revocation) bool { return r.ID == id }) {
		return "revoked before"
	}
	return ""
}

func knownHolder(auth *capability.Authority, minted []capability.Minted, holder string) string {
	n := 0
	for _, m := range minted {
		if m.Holder == holder {
			n++
		}
	}
	switch {
	case n > 0:
		return fmt.Sprintf("%d token(s) minted in this tool root", n)
	case auth.HasHolder(holder):
		return "a process of this node holds its tokens"
	}
	return ""
}

func clipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Revoke is the admin socket's POST /v1/revoke ('agentos token revoke'
// while the node serves): an unknown target is answered 404, a bad one 400.
func (b adminBackend) Revoke(req admin.RevokeRequest) (any, error) {
	rep, err := b.rt.Revoke(RevokeRequest{Target: req.Target, Holder: req.Holder, Force: req.Force})
	switch {
	case errors.Is(err, ErrUnknownToken):
		return nil, &admin.StatusError{Code: http.StatusNotFound, Err: err}
	case err != nil && rep.At.IsZero():
		return nil, &admin.StatusError{Code: http.StatusBadRequest, Err: err}
	case err != nil: // in force, not stored
		return nil, err
	}
	return rep, nil
}
