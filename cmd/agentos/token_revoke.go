package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
)

// runTokenRevoke revokes capability tokens signed with the root's key:
// agentos token revoke [--root DIR] [--json] [--holder] [--force] ID|HOLDER|TOKEN.
// Through the node serving the root when one does (in force there at once
// and published to its cluster), else in the root's state, in force from
// the next start of a node there.
func runTokenRevoke(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("token revoke", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print exactly one JSON object {id|holder, at, known, durable, node}")
	holder := fs.Bool("holder", false, "read the argument as a holder's name even if it looks like a token id")
	force := fs.Bool("force", false, "revoke even if nothing in this tool root or node knows the id or holder (a token minted elsewhere with the same signing key)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("token revoke takes one argument, the token id (24 hexadecimal digits, see 'agentos token list'), a holder (every token issued to it until now) or the token itself; got %d", len(pos))
	}
	absRoot, cfg, err := openRoot(*root)
	if err != nil {
		return err
	}
	req := host.RevokeRequest{Target: pos[0], Holder: *holder, Force: *force}
	var rep host.RevokeReport
	switch nc, err := admin.Dial(absRoot); {
	case errors.Is(err, admin.ErrNoNode):
		cfg.Root = absRoot
		if rep, err = host.Revoke(cfg, req); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		defer nc.Close()
		if err := nc.Revoke(ctx, admin.RevokeRequest{Target: req.Target, Holder: req.Holder, Force: req.Force}, &rep); err != nil {
			return err
		}
	}
	if *asJSON {
		return fprintJSON(stdout, rep)
	}
	printRevoked(stdout, rep, absRoot)
	return nil
}

// printRevoked says what was revoked and from when it is refused: at once
// by a serving node (and kept across restarts when durable), else from the
// next start of a node on the root.
func printRevoked(stdout io.Writer, rep host.RevokeReport, absRoot string) {
	what := "token " + rep.ID + ", and every token derived from it"
	if rep.Holder != "" {
		what = "every token issued to " + rep.Holder + " until " + rep.At.Format(time.RFC3339) + ", and every token derived from them"
	}
	fmt.Fprintf(stdout, "revoked %s\n", what)
	switch {
	case rep.Node && rep.Durable:
		fmt.Fprintf(stdout, "  refused now by the node serving %s (and by every node of its cluster, if it is in one); kept in %s, so it outlives restarts\n", absRoot, host.RevocationsFile)
	case rep.Node:
		fmt.Fprintln(stdout, "  refused now by the node serving this root (it has no capability.signing_key_env: its tokens end with it)")
	default:
		fmt.Fprintf(stdout, "  no node serves %s: kept in %s, refused from the next start of a node here (which publishes it to its cluster)\n", absRoot, host.RevocationsFile)
	}
}

// tokenList is 'agentos token list --json'.
type tokenList struct {
	Tokens []listedToken `json:"tokens"`
	// Revocations are the root's durable revocations (of tokens minted
	// here or elsewhere, and of holders).
	Revocations []listedRevocation `json:"revocations"`
}

type listedToken struct {
	capability.Minted
	Revoked bool `json:"revoked"`
}

type listedRevocation struct {
	ID     string    `json:"id,omitempty"`
	Holder string    `json:"holder,omitempty"`
	At     time.Time `json:"at"`
}

// runTokenList lists the tokens 'agentos token' minted for the root and
// the root's durable revocations: agentos token list [--root DIR] [--json].
func runTokenList(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("token list", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print exactly one JSON object {tokens: [{id, holder, grants, minted, expires, revoked}], revocations: [{id|holder, at}]}")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("token list takes no arguments, got %q", pos)
	}
	absRoot, _, err := openRoot(*root)
	if err != nil {
		return err
	}
	out, err := listTokens(capability.RevocationFile(filepath.Join(absRoot, host.RevocationsFile)))
	if err != nil {
		return err
	}
	if *asJSON {
		return fprintJSON(stdout, out)
	}
	printTokenList(stdout, out)
	return nil
}

// listTokens reads the tokens minted for the root and its durable
// revocations from file; a token is revoked by its id, or by its holder's
// revocation when it was minted at or before it.
func listTokens(file capability.RevocationFile) (tokenList, error) {
	minted, err := file.Minted()
	if err != nil {
		return tokenList{}, err
	}
	rs, err := file.Load()
	if err != nil {
		return tokenList{}, err
	}
	out := tokenList{Tokens: []listedToken{}, Revocations: []listedRevocation{}}
	ids, holders := map[string]bool{}, map[string]time.Time{}
	for _, r := range rs {
		out.Revocations = append(out.Revocations, listedRevocation{ID: r.ID, Holder: r.Holder, At: r.At})
		if r.Holder != "" {
			holders[r.Holder] = r.At
		} else {
			ids[r.ID] = true
		}
	}
	for _, m := range minted {
		at, byHolder := holders[m.Holder]
		out.Tokens = append(out.Tokens, listedToken{Minted: m, Revoked: ids[m.ID] || byHolder && !m.At.After(at)})
	}
	return out, nil
}

// printTokenList prints one line per token with its state, then the
// revocations.
func printTokenList(stdout io.Writer, out tokenList) {
	if len(out.Tokens) == 0 {
		fmt.Fprintln(stdout, "no token was minted for this tool root ('agentos token' mints one)")
	}
	for _, t := range out.Tokens {
		state, expires := tokenState(t)
		fmt.Fprintf(stdout, "%s  %-8s holder %-16s minted %s  expires %s  grants %s\n", t.ID, state, t.Holder, t.At.Format(time.RFC3339), expires, describeGrants(t.Grants))
	}
	for _, r := range out.Revocations {
		if r.Holder != "" {
			fmt.Fprintf(stdout, "revoked: every token of holder %s issued until %s\n", r.Holder, r.At.Format(time.RFC3339))
		} else {
			fmt.Fprintf(stdout, "revoked: token %s at %s\n", r.ID, r.At.Format(time.RFC3339))
		}
	}
}

// tokenState is a listed token's state (valid, revoked or expired) and
// when it expires ("never" when it does not).
func tokenState(t listedToken) (state, expires string) {
	state, expires = "valid", "never"
	switch {
	case t.Revoked:
		state = "revoked"
	case !t.Expires.IsZero() && time.Now().After(t.Expires):
		state = "expired"
	}
	if !t.Expires.IsZero() {
		expires = t.Expires.Format(time.RFC3339)
	}
	return state, expires
}
