package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/actors/kernel/proc"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/kerneltool"
)

// confirmTTL is how long a confirmation the server asked for may be
// answered.
const confirmTTL = 10 * time.Minute

// confirmID is the id of the confirmation input request.
const confirmID = "agentos-confirm"

// confirmState is what a confirmation request is about, signed into its
// RequestState: the answer counts only for the same session and process,
// the same path with the same content, before Expires, once.
type confirmState struct {
	Session string   `json:"s"`
	PID     proc.PID `json:"p"`
	Path    string   `json:"t"`
	Hash    string   `json:"h"`
	Expires int64    `json:"e"` // Unix seconds
	Nonce   string   `json:"n"`
}

// confirmer signs confirmation states and remembers the ones answered.
type confirmer struct {
	key  [32]byte
	mu   sync.Mutex
	used map[string]int64 // nonce -> expiry (Unix seconds)
}

func newConfirmer() *confirmer {
	c := &confirmer{used: map[string]int64{}}
	_, _ = rand.Read(c.key[:])
	return c
}

func (c *confirmer) mac(payload string) string {
	m := hmac.New(sha256.New, c.key[:])
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sign returns the RequestState of st.
func (c *confirmer) sign(st confirmState) string {
	b, _ := json.Marshal(st)
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + c.mac(payload)
}

// redeem checks that state is a state this server signed for want (all
// fields but Expires and Nonce), unexpired and not redeemed before, and
// marks it redeemed.
func (c *confirmer) redeem(state string, want confirmState, now time.Time) error {
	payload, sig, ok := strings.Cut(state, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(c.mac(payload))) {
		return errors.New("it carries no confirmation request of this server (an answer nobody asked for)")
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	var st confirmState
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		return errors.New("its confirmation state is unreadable")
	}
	switch {
	case st.Session != want.Session || st.PID != want.PID:
		return errors.New("the confirmation was asked in another session")
	case st.Path != want.Path:
		return fmt.Errorf("the confirmation was asked for %s", st.Path)
	case st.Hash != want.Hash:
		return errors.New("the tool changed since the confirmation was asked")
	case now.Unix() > st.Expires:
		return errors.New("the confirmation request expired")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, exp := range c.used {
		if now.Unix() > exp {
			delete(c.used, n)
		}
	}
	if _, seen := c.used[st.Nonce]; seen {
		return errors.New("this confirmation was used already")
	}
	c.used[st.Nonce] = st.Expires
	return nil
}

// confirm asks the client to confirm a run of the tool at p when its
// check_tool risk is high or critical: it returns a nil result when the run
// may go on, with the context to run it in, or the result to answer (the
// elicitation request, or a refusal).
//
// A confirmation is recorded as the version's approval at the gate (for
// every caller) only when the client's token holds the approve right on the
// tool (capability.Approve); without it the returned context clears this
// one run (kerneltool.ConfirmedRun) and nothing is recorded.
//
// IMPORTANT: it fails closed. The confirmation request carries a signed
// RequestState tied to the session, the process, the path, the SHA-256 of
// the tool's source and an expiry; only an answer that echoes it (once)
// with action "accept" and confirm == true lets the run go on. An answer
// nobody asked for, a tool changed while the user decided, an expired or
// reused state, or any error checking the risk or reading the source
// refuses the run.
func (s *Server) confirm(ctx context.Context, req *mcp.CallToolRequest, proc proc.Process, p string) (context.Context, *mcp.CallToolResult) {
	if p == "" {
		return ctx, nil // exec_tool reports the missing path
	}
	risk, why, err := s.risk(ctx, proc, p)
	if err != nil {
		return ctx, plainResult(nil, fmt.Errorf("%s is not run: its risk cannot be checked: %w", p, err))
	}
	if !risk.AtLeast(check.RiskHigh) {
		return ctx, nil
	}
	hash, err := s.sourceHash(ctx, proc, p)
	if err != nil {
		return ctx, plainResult(nil, fmt.Errorf("%s (risk %s) is not run: its source cannot be read to tie the confirmation to it: %w", p, risk, err))
	}
	if afterSourceHash != nil {
		afterSourceHash(p)
	}
	ask, refused := s.confirmGate(proc, p, risk, hash)
	if refused != nil {
		return ctx, refused
	}
	if ask != nil {
		// The confirmation is tied to the approval key, which covers the
		// modules the tool requires too: a module changed before the
		// answer comes is a changed version.
		hash = ask.Hash
	}
	sid := ""
	if req.Session != nil {
		sid = req.Session.ID()
	}
	run := pendingRun{path: p, risk: risk, why: why, ask: ask, sid: sid,
		want: confirmState{Session: sid, PID: proc.PID(), Path: p, Hash: hash}}
	if answer, answered := req.Params.InputResponses[confirmID]; answered || req.Params.RequestState != "" {
		return s.confirmed(ctx, req, proc, run, answer)
	}
	return ctx, s.askConfirmation(req, proc, run)
}

// pendingRun is a run of a risky tool confirm decides about: the tool at
// path, its risk and why, the state the confirmation is tied to (want), in
// session sid, and the approval gate's request for the version (nil
// without a gate, or when the gate cannot judge the tool).
type pendingRun struct {
	path string
	risk check.Risk
	why  string
	sid  string
	want confirmState
	ask  *approval.Ask
}

// confirmGate makes the approval gate and the confirmation agree: a
// version denied at the gate is refused without asking (only an operator's
// 'agentos approve' lifts a denial), and a confirmation given here is
// recorded as the version's approval (confirmed), so the gate lets the
// run through. Each run over MCP is still confirmed by the client's user.
// It returns the gate's request for the version of the tool at p whose
// source has the given hash, or the refusal.
func (s *Server) confirmGate(proc proc.Process, p string, risk check.Risk, hash string) (*approval.Ask, *mcp.CallToolResult) {
	gate := s.opts.Node.Approvals()
	if gate == nil {
		return nil, nil
	}
	a, err := s.opts.Node.ApprovalAsk(proc, p)
	if err != nil {
		return nil, nil
	}
	// IMPORTANT: the version confirmed MUST be the version approved: the
	// approval is read apart from the source the user is asked about, and
	// a tool written between the two reads is refused, never approved
	// unseen.
	if a.Source != strings.TrimPrefix(hash, "registry:") {
		return nil, failure(KindConfirmation, fmt.Sprintf("the run of %s (risk %s) is refused: the tool changed while its confirmation was prepared (version %.12s read, %.12s judged at the approval gate); call the tool again to be asked about the version it has now", p, risk, strings.TrimPrefix(hash, "registry:"), a.Source))
	}
	if r, ok, err := gate.Store().Lookup(a.Path, a.Hash); err == nil && ok && r.State == approval.StateDenied {
		return nil, failure(KindConfirmation, fmt.Sprintf("the run of %s (risk %s) is refused: this version was denied at the approval gate by %s: %s; only an approval ('agentos approve %s') lets it run", p, risk, r.DecidedBy, r.Reason, r.ID))
	}
	return &a, nil
}

// confirmed checks the client's answer to the confirmation request of run
// (its RequestState redeemed once, an accepted elicitation with confirm:
// true) and returns the context to run it in, or the refusal.
func (s *Server) confirmed(ctx context.Context, req *mcp.CallToolRequest, proc proc.Process, run pendingRun, answer any) (context.Context, *mcp.CallToolResult) {
	if err := s.confirms.redeem(req.Params.RequestState, run.want, time.Now()); err != nil {
		return ctx, failure(KindConfirmation, fmt.Sprintf("the run of %s (risk %s) is refused: %v; call the tool again (without inputResponses) to be asked", run.path, run.risk, err))
	}
	if why := unconfirmed(answer); why != "" {
		return ctx, failure(KindConfirmation, fmt.Sprintf("the run of %s (risk %s: %s) was not confirmed: %s", run.path, run.risk, run.why, why))
	}
	ask := run.ask
	if ask == nil {
		return ctx, nil
	}
	if !proc.Covers(capability.Approve, ask.Path) || proc.Check(capability.Approve, ask.Path) != nil {
		// IMPORTANT: a client whose token lacks the approve right on
		// the tool cannot approve it for every caller: its
		// confirmation lets this one run through the gate and records
		// nothing.
		return kerneltool.ConfirmedRun(ctx, ask.Path, ask.Hash), nil
	}
	// The version confirmed is the version approved: the gate lets the
	// run through, and later runs of it (by any caller) are not held.
	if _, err := s.opts.Node.Approvals().DecideVersion(*ask, true, "mcp:"+confirmedBy(proc, run.sid), "confirmed by the MCP client's user (elicitation)"); err != nil {
		return ctx, plainResult(nil, fmt.Errorf("%s (risk %s) is not run: its confirmation could not be recorded as its approval: %w", run.path, run.risk, err))
	}
	return ctx, nil
}

// unconfirmed says why the client's answer does not confirm the run, or
// "" when it does: only an elicitation result with action "accept" and
// confirm == true does.
func unconfirmed(answer any) string {
	r, ok := answer.(*mcp.ElicitResult)
	switch {
	case !ok || r == nil:
		return fmt.Sprintf("the answer to %q is missing or not an elicitation result", confirmID)
	case r.Action != "accept":
		return fmt.Sprintf("the client answered %q", r.Action)
	}
	if v, ok := r.Content["confirm"].(bool); !ok || !v {
		return "the client accepted without confirm: true"
	}
	return ""
}

// askConfirmation is the elicitation request that asks the client's user
// to confirm run, carrying its signed state with a fresh nonce and an
// expiry; a client that cannot elicit is refused.
func (s *Server) askConfirmation(req *mcp.CallToolRequest, proc proc.Process, run pendingRun) *mcp.CallToolResult {
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		return failure(KindConfirmation, fmt.Sprintf("%s has risk %s (%s): a run must be confirmed by the user, and this client did not declare the elicitation capability; use a client that supports elicitation, or have the tool changed until check_tool rates it below high", run.path, run.risk, run.why))
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	want := run.want
	want.Expires, want.Nonce = time.Now().Add(confirmTTL).Unix(), hex.EncodeToString(nonce[:])
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{confirmID: &mcp.ElicitParams{
			Mode:            "form",
			Message:         fmt.Sprintf("agentos: run %s? check_tool rates it %s risk: %s.%s", run.path, run.risk, run.why, s.approveNote(proc, run.ask)),
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Run it","description":"Run the tool despite its risk.","default":true}},"required":["confirm"]}`),
		}},
		RequestState: s.confirms.sign(want),
	}
}

// approveNote is what the question says a confirmation does at the
// approval gate.
func (s *Server) approveNote(proc proc.Process, ask *approval.Ask) string {
	switch {
	case ask == nil:
		return ""
	case proc.Covers(capability.Approve, ask.Path):
		return " Confirming also approves this version of it at the approval gate, for every caller."
	}
	return " Confirming lets this run go; it does not approve the tool for other callers (that needs the approve right)."
}

// afterSourceHash, when set (tests only), is called between the read of
// the source a confirmation is tied to and the approval gate's judgment.
var afterSourceHash func(path string)

// sourceHash is the SHA-256 of the tool at p as proc reads it, or, when
// proc may not read it, the registry's content hash of the registered tool
// at p.
func (s *Server) sourceHash(ctx context.Context, proc proc.Process, p string) (string, error) {
	args, _ := json.Marshal(map[string]string{"path": p})
	out, err := s.opts.Node.Call(ctx, proc, "read_file", args)
	if errors.Is(err, capability.ErrDenied) {
		if t, ok, gerr := s.opts.Registry.Get(ctx, p); gerr == nil && ok && t.Hash != "" {
			return "registry:" + t.Hash, nil
		}
	}
	if err != nil {
		return "", err
	}
	// read_file answers the content as a JSON string: its bytes are hashed
	// as the gate hashes them (transpile.Hash).
	var src string
	if err := json.Unmarshal(out, &src); err != nil {
		return "", fmt.Errorf("read_file of %s answered no text: %w", p, err)
	}
	sum := sha256.Sum256([]byte(src))
	return hex.EncodeToString(sum[:]), nil
}

// risk is check_tool's risk of the tool at p, run as proc, and its reasons.
// A tool proc may not read counts as high: its risk cannot be known.
func (s *Server) risk(ctx context.Context, proc proc.Process, p string) (check.Risk, string, error) {
	args, _ := json.Marshal(map[string]string{"path": p})
	out, err := s.opts.Node.Call(ctx, proc, "check_tool", args)
	if errors.Is(err, capability.ErrDenied) {
		return check.RiskHigh, "its source cannot be read with this client's capabilities, so its risk is unknown", nil
	}
	if err != nil {
		return "", "", err
	}
	var r check.Result
	if err := json.Unmarshal(out, &r); err != nil {
		return "", "", err
	}
	var reasons []string
	for _, f := range r.Risks {
		if f.Level.AtLeast(check.RiskHigh) {
			reasons = append(reasons, f.Reason)
		}
	}
	return r.Risk, strings.Join(slices.Compact(reasons), "; "), nil
}

// confirmedBy names who confirmed through MCP: the process's token holder,
// and the session.
func confirmedBy(proc proc.Process, session string) string {
	who := proc.Holder()
	if who == "" {
		who = proc.Name()
	}
	if session != "" {
		who += " (session " + session + ")"
	}
	return who
}
