package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentos-run/agentos/admin"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/internal/host"
)

// runApprove answers an approval request of the approval gate:
// agentos approve [--root DIR] [--json] [--deny] [--reason R] [--list] RUN|TOOL.
// With a node serving the root it goes through the node (its waiting runs
// go on at once); without one it writes the approvals file itself.
func runApprove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print exactly one JSON object: the decided request {id, path, hash, risk, state, decided_by, reason ...} (with --list: {approvals: [...]})")
	deny := fs.Bool("deny", false, "deny instead of approving: the waiting runs end with approval_denied and the reason")
	reason := fs.String("reason", "", "the reason `R` recorded with the decision (a denied run's error carries it)")
	list := fs.Bool("list", false, "list the pending approval requests (as 'agentos approvals')")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *list {
		if len(pos) != 0 {
			return usagef("--list takes no argument")
		}
		return listApprovals(ctx, *root, approval.StatePending, *asJSON, stdout)
	}
	if len(pos) != 1 {
		return usagef("expected one approval request id (see 'agentos approvals') or tool path, got %d arguments", len(pos))
	}
	abs, cfg, err := openRoot(*root)
	if err != nil {
		return err
	}
	req := admin.ApproveRequest{Target: pos[0], Deny: *deny, Reason: *reason, By: cliUser()}
	var r approval.Request
	c, err := admin.Dial(abs)
	switch {
	case err == nil:
		defer c.Close()
		if err := c.Approve(ctx, req, &r); err != nil {
			return err
		}
	case errors.Is(err, admin.ErrNoNode):
		// The approvals file lives in the root's state directory, which a
		// root made with 'agentos init --no-git' has not created yet.
		if err := os.MkdirAll(filepath.Join(abs, host.StateDir), 0o700); err != nil {
			return fmt.Errorf("creating the state directory for the approvals file: %w", err)
		}
		if r, err = host.DecideOffline(abs, cfg, req.Target, !req.Deny, host.ApproveOptions{By: req.By, Reason: req.Reason}); err != nil {
			return err
		}
	default:
		return err
	}
	if *asJSON {
		return fprintJSON(stdout, r)
	}
	printDecision(stdout, stderr, r)
	return nil
}

// printDecision prints the decided request, and on stderr what becomes of
// the runs that waited for it.
func printDecision(stdout, stderr io.Writer, r approval.Request) {
	fmt.Fprintf(stdout, "%s %s: %s (version %.12s, risk %s) by %s", r.State, r.ID, r.Path, r.Hash, r.Risk, r.DecidedBy)
	if r.Reason != "" {
		fmt.Fprintf(stdout, ": %s", r.Reason)
	}
	fmt.Fprintln(stdout)
	switch {
	case r.Waiting > 0 && r.State == approval.StateApproved:
		fmt.Fprintf(stderr, "%d waiting run(s) go on now\n", r.Waiting)
	case r.Waiting > 0:
		fmt.Fprintf(stderr, "%d waiting run(s) end now with approval_denied\n", r.Waiting)
	}
}

// runApprovals lists the approval requests:
// agentos approvals [--root DIR] [--json] [--all | --state S].
func runApprovals(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("approvals", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print exactly one JSON object {approvals: [...]}")
	all := fs.Bool("all", false, "every request, decided ones too (default: the pending ones)")
	state := fs.String("state", "", "only the requests in state `S`: pending, approved or denied")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("approvals takes no argument")
	}
	st := approval.StatePending
	switch {
	case *state != "":
		switch s := approval.State(*state); s {
		case approval.StatePending, approval.StateApproved, approval.StateDenied:
			st = s
		default:
			return usagef("--state %q: use pending, approved or denied", *state)
		}
	case *all:
		st = ""
	}
	return listApprovals(ctx, *root, st, *asJSON, stdout)
}

func listApprovals(ctx context.Context, root string, state approval.State, asJSON bool, stdout io.Writer) error {
	abs, _, err := openRoot(root)
	if err != nil {
		return err
	}
	var rs []approval.Request
	c, err := admin.Dial(abs)
	switch {
	case err == nil:
		defer c.Close()
		if err := c.Approvals(ctx, string(state), &rs); err != nil {
			return err
		}
	case errors.Is(err, admin.ErrNoNode):
		if rs, err = host.ListOffline(abs, state); err != nil {
			return err
		}
	default:
		return err
	}
	if rs == nil {
		rs = []approval.Request{}
	}
	if asJSON {
		return fprintJSON(stdout, struct {
			Approvals []approval.Request `json:"approvals"`
		}{rs})
	}
	if len(rs) == 0 {
		what := "no approval request"
		if state != "" {
			what = "no " + string(state) + " approval request"
		}
		fmt.Fprintln(stdout, what)
		return nil
	}
	for _, r := range rs {
		printApproval(stdout, r)
	}
	if state == approval.StatePending {
		fmt.Fprintln(stdout, "approve with 'agentos approve ID' (or the tool's path); deny with 'agentos approve --deny --reason R ID'")
	}
	return nil
}

// printApproval prints one approval request: what it asks to run, who
// asked, the runs waiting and, once decided, the decision.
func printApproval(stdout io.Writer, r approval.Request) {
	fmt.Fprintf(stdout, "%s  %-8s  %s  version %.12s  risk %s", r.ID, r.State, r.Path, r.Hash, r.Risk)
	if len(r.Reasons) > 0 {
		fmt.Fprintf(stdout, " (%s)", strings.Join(r.Reasons, "; "))
	}
	fmt.Fprintf(stdout, "\n    asked by %s at %s", orDash(r.RequestedBy), r.Requested.Local().Format(time.DateTime))
	if r.Waiting > 0 {
		fmt.Fprintf(stdout, ", %d run(s) waiting", r.Waiting)
	}
	if r.State != approval.StatePending {
		fmt.Fprintf(stdout, "; %s by %s at %s", r.State, orDash(r.DecidedBy), r.Decided.Local().Format(time.DateTime))
		if r.Reason != "" {
			fmt.Fprintf(stdout, ": %s", r.Reason)
		}
	}
	fmt.Fprintln(stdout)
}

// cliUser is who decides from this terminal: "cli:" and the OS user.
func cliUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli"
}
