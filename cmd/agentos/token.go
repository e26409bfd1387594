package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
)

// tokenRights are the rights 'agentos token --grant' accepts.
var tokenRights = capability.Rights()

// grantFlags is --grant, repeated: RIGHT or RIGHT:SCOPE.
type grantFlags []capability.Grant

func (g *grantFlags) String() string { return fmt.Sprint(*g) }

func (g *grantFlags) Set(v string) error {
	right, scope, _ := strings.Cut(v, ":")
	if !slices.Contains(tokenRights, capability.Right(right)) {
		return fmt.Errorf("unknown right %q in %q: use one of %v, e.g. exec:tools/", right, v, tokenRights)
	}
	*g = append(*g, capability.Grant{Right: capability.Right(right), Scope: scope})
	return nil
}

// tokenReply is 'agentos token --json'.
type tokenReply struct {
	Token   string             `json:"token"`
	ID      string             `json:"id"`
	Holder  string             `json:"holder"`
	Grants  []capability.Grant `json:"grants"`
	Expires time.Time          `json:"expires,omitzero"`
}

// runToken mints a capability token with the node's signing key, e.g. for
// an MCP client of 'agentos serve --mcp-http':
// agentos token [--root DIR] [--json] [--grant RIGHT[:SCOPE]]... [--ttl D] [--holder NAME];
// agentos token revoke ... and agentos token list ... (token_revoke.go).
func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "revoke":
			return runTokenRevoke(ctx, args[1:], stdout)
		case "list":
			return runTokenList(args[1:], stdout)
		}
	}
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print exactly one JSON object {token, id, holder, grants, expires}")
	var grants grantFlags
	fs.Var(&grants, "grant", "a right the token grants, RIGHT or RIGHT:SCOPE (e.g. exec:tools/, read:tools/math/, llm); repeat it. Default: the default process's grants (agent.grants)")
	ttl := fs.String("ttl", "30d", "how long the token is valid (a Go duration, days like 30d, or seconds); 0: no expiry")
	holder := fs.String("holder", "mcp-client", "who the token is for, as 'agentos ps' and the logs name it")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("token takes no arguments, got %q (or: 'agentos token revoke ID|HOLDER', 'agentos token list')", pos)
	}
	absRoot, cfg, err := openRoot(*root)
	if err != nil {
		return err
	}
	auth, err := mintingAuthority(cfg)
	if err != nil {
		return err
	}
	if len(grants) == 0 {
		grants = cfg.DefaultGrants()
	}
	c, err := ttlCaveats(*ttl)
	if err != nil {
		return err
	}
	tok := auth.Mint(*holder, grants, c)
	// Recorded before it is printed: every token handed out is in 'agentos
	// token list', where its id is found to revoke it.
	if err := capability.RevocationFile(filepath.Join(absRoot, host.RevocationsFile)).RecordMinted(tok); err != nil {
		return err
	}
	if *asJSON {
		return fprintJSON(stdout, tokenReply{Token: tok.Encode(), ID: tok.ID, Holder: tok.Holder, Grants: tok.Grants, Expires: c.NotAfter})
	}
	fmt.Fprintln(stdout, tok.Encode())
	fmt.Fprintf(stderr, "token %s for %s grants %s; send it as \"Authorization: Bearer <token>\" to 'agentos serve --mcp-http' (docs/MCP.md); revoke it with 'agentos token revoke %s'\n", tok.ID, tok.Holder, describeGrants(grants), tok.ID)
	return nil
}

// mintingAuthority is the authority that mints with the root's signing
// key (capability.signing_key_env): a root without one cannot mint tokens
// a node verifies.
func mintingAuthority(cfg host.Config) (*capability.Authority, error) {
	key, err := cfg.CapabilityKey()
	if err != nil {
		return nil, usagef("%v", err)
	}
	if key == nil {
		return nil, usagef("this tool root has no capability.signing_key_env, so a node verifies only the tokens it mints itself: set \"capability\": {\"signing_key_env\": \"AGENTOS_CAPABILITY_KEY\"} in agentos.json and export a key (e.g. `openssl rand -hex 32`) for both 'agentos token' and 'agentos serve'; or use the token 'agentos serve --mcp-http' writes to .agentos/mcp-token")
	}
	auth, err := capability.New(capability.Options{Key: key})
	if err != nil {
		return nil, usagef("%v", err)
	}
	return auth, nil
}

// ttlCaveats are the caveats of --ttl: the token expires after it ("0":
// never).
func ttlCaveats(ttl string) (capability.Caveats, error) {
	var c capability.Caveats
	if ttl == "0" {
		return c, nil
	}
	d, err := parseDuration(ttl)
	if err != nil {
		return c, usagef("--ttl: %v", err)
	}
	c.NotAfter = time.Now().Add(d).UTC()
	return c, nil
}

func describeGrants(gs []capability.Grant) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = string(g.Right)
		if g.Scope != "" {
			parts[i] += ":" + g.Scope
		}
	}
	return strings.Join(parts, ", ")
}
