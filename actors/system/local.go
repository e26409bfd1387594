package system

import (
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/agentos-run/agentos/capability"
)

// Who sends a request that acts (writes a file, spawns or signals a
// process, registers a tool, forges, charges a quota) is established here,
// the same way by every actor of a node (docs/SECURITY.md, "Messages
// between nodes"):
//
//   - A request that carries a capability token is its holder's, wherever
//     it came from (a kernel tool acting for a process, another node
//     forging for one of its processes): the token MUST verify with the
//     node's Authority, and the actor checks its grants as for a local
//     call.
//   - A request without a token is the node's own only when it arrived in a
//     Local envelope. Local is a plain Go value, never a protobuf message:
//     protoactor's remote decodes only registered protobuf messages, so no
//     other process can ever deliver one. A flag or a field in a message
//     could be forged by any peer that reaches the cluster port; this
//     cannot.
//   - Any other request is refused (ErrUnauthenticated), and the refusal
//     says what was missing.

// Local is the envelope of a request an actor of this process sends to
// another actor of this process: the node identity. Clients wrap their
// requests with Outgoing, which wraps only what stays in this process.
//
// IMPORTANT: Local MUST stay a plain Go struct (never a protobuf message,
// never registered with a serializer): that is what makes it unforgeable.
type Local struct {
	// Msg is the request.
	Msg any
}

// Unwrap returns the request inside a Local and true, or msg itself and
// false: what an actor's Receive switches on, and whether the node itself
// sent it.
func Unwrap(msg any) (any, bool) {
	if l, ok := msg.(*Local); ok {
		return l.Msg, true
	}
	return msg, false
}

// IsLocal reports whether pid is an actor of the process sender belongs
// to (protoactor's own test: the address "nonhost" or the system's).
func IsLocal(sender actor.SenderContext, pid *actor.PID) bool {
	if pid == nil || sender == nil {
		return false
	}
	a := pid.GetAddress()
	return a == "nonhost" || a == sender.ActorSystem().ProcessRegistry.Address
}

// Outgoing returns what a client sends to pid for msg: msg in a Local when
// pid is an actor of this process (the node itself asks), msg as it is
// when pid is another node's (it crosses the wire and MUST carry a token
// to act there).
func Outgoing(sender actor.SenderContext, pid *actor.PID, msg any) any {
	if IsLocal(sender, pid) {
		return &Local{Msg: msg}
	}
	return msg
}

// ErrUnauthenticated: a request that acts came from outside the node
// without a capability token, or with one that does not verify. Nothing
// was done.
var ErrUnauthenticated = errors.New("unauthenticated request")

// CodeUnauthenticated is ErrUnauthenticated's wire code in every actor's
// failure table.
const CodeUnauthenticated = "unauthenticated"

// From is who sent a request: the node itself, or the holder of a verified
// token.
type From struct {
	// Node says the node itself sent it (a Local without a token).
	Node bool
	// Token is the verified token of the holder it acts for (zero when
	// Node).
	Token capability.Token
}

// Authenticate returns who sent a request named what ("WriteFile of
// tools/x.ts"): local says it arrived in a Local, token is its token field
// (capability.Token.Encode; "" for none). A token MUST verify with auth
// (signature, revocation, expiry); none is accepted when auth is nil.
// Errors wrap ErrUnauthenticated and, for a bad token, the capability
// error that says why (capability.ErrInvalid, ErrRevoked, ErrExpired).
func Authenticate(auth *capability.Authority, local bool, token, what string) (From, error) {
	if token == "" {
		if local {
			return From{Node: true}, nil
		}
		return From{}, fmt.Errorf("%w: %s came from outside this node without a capability token; every request that acts MUST carry its caller's token (docs/SECURITY.md, \"Messages between nodes\")", ErrUnauthenticated, what)
	}
	if auth == nil {
		return From{}, fmt.Errorf("%w: %s carries a token, and this actor was started without the node's capability authority to verify it", ErrUnauthenticated, what)
	}
	t, err := capability.Decode(token)
	if err != nil {
		return From{}, fmt.Errorf("%w: %s: %w", ErrUnauthenticated, what, err)
	}
	if err := auth.Verify(t); err != nil {
		return From{}, fmt.Errorf("%w: %s: %w", ErrUnauthenticated, what, err)
	}
	return From{Token: t}, nil
}

// Holder is who the request acts for: "node", or the token's holder.
func (f From) Holder() string {
	if f.Node {
		return "node"
	}
	return f.Token.Holder
}

// Permit checks that the sender may use right on resource: the node always
// may; a token's holder when one of its grants covers it (no use of the
// token is consumed: the kernel tool that sent it, if any, already counted
// its call). Errors wrap capability.ErrDenied and say which right on what.
func (f From) Permit(right capability.Right, resource string) error {
	if f.Node || capability.GrantsCover(f.Token.Grants, right, resource) {
		return nil
	}
	what := resource
	if what == "" {
		what = "anything"
	}
	return fmt.Errorf("%w: token %s (held by %s) grants no %s on %s", capability.ErrDenied, f.Token.ID, f.Token.Holder, right, what)
}

// WithToken sets msg's "token" field (every request that acts has one) to
// token and returns msg; a message without that field, or an empty token,
// is returned unchanged.
func WithToken(msg proto.Message, token string) proto.Message {
	if token == "" || msg == nil {
		return msg
	}
	r := msg.ProtoReflect()
	if fd := r.Descriptor().Fields().ByName("token"); fd != nil && fd.Kind() == protoreflect.StringKind && !fd.IsList() {
		r.Set(fd, protoreflect.ValueOfString(token))
	}
	return msg
}
