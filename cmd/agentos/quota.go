package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/host"
)

// quotaRow is one account as `agentos quota --json` prints it.
type quotaRow struct {
	Account string                       `json:"account"`
	Spent   map[capability.Meter]float64 `json:"spent"`
	Limits  map[capability.Meter]float64 `json:"limits,omitempty"`
}

// runQuota shows or resets the quota use a tool root keeps across
// invocations: agentos quota [--root DIR] [--json] | agentos quota reset
// [--root DIR] [ACCOUNT...].
func runQuota(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("quota", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print one JSON object {\"accounts\": [...]}")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	abs, cfg, err := openRoot(*root)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		if pos[0] != "reset" {
			return usagef("unknown quota action %q: use 'agentos quota' to show the use, 'agentos quota reset [ACCOUNT...]' to clear it", pos[0])
		}
		return resetQuota(stdout, abs, pos[1:], *asJSON)
	}
	use, err := host.QuotaUse(abs)
	if err != nil {
		return quotaErr(err)
	}
	limits := map[string]map[string]float64{kernel.LedgerKey(""): cfg.Quota, kernel.LedgerKey("agent"): cfg.Agent.Quota}
	rows := make([]quotaRow, 0, len(use))
	for _, u := range use {
		rows = append(rows, quotaRow{Account: u.Account, Spent: u.Spent, Limits: cumulativeLimits(limits[u.Account])})
	}
	if *asJSON {
		return fprintJSON(stdout, map[string][]quotaRow{"accounts": rows})
	}
	if len(rows) == 0 {
		fmt.Fprintln(stdout, "no quota use recorded: use is kept for the node and the default process while agentos.json limits tool_calls, llm_tokens or cost_usd")
		return nil
	}
	return printQuotaRows(stdout, rows)
}

// resetQuota clears the recorded use of accounts (every account when none
// is named): agentos quota reset [ACCOUNT...].
func resetQuota(stdout io.Writer, abs string, accounts []string, asJSON bool) error {
	cleared, err := host.ResetQuota(abs, accounts...)
	if err != nil {
		return quotaErr(err)
	}
	if asJSON {
		return fprintJSON(stdout, map[string][]string{"reset": nonNilSlice(cleared)})
	}
	if len(cleared) == 0 {
		fmt.Fprintln(stdout, "no quota use was recorded: nothing to reset")
		return nil
	}
	fmt.Fprintf(stdout, "quota use reset for %s\n", strings.Join(cleared, ", "))
	return nil
}

// cumulativeLimits are the limits of an account's quota whose use is kept
// across invocations (nil when there are none).
func cumulativeLimits(quota map[string]float64) map[capability.Meter]float64 {
	var out map[capability.Meter]float64
	for m, v := range quota {
		if capability.IsCumulative(capability.Meter(m)) {
			if out == nil {
				out = map[capability.Meter]float64{}
			}
			out[capability.Meter(m)] = v
		}
	}
	return out
}

// printQuotaRows prints one line per account and meter spent, by meter
// name, with the meter's limit.
func printQuotaRows(stdout io.Writer, rows []quotaRow) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tMETER\tSPENT\tLIMIT")
	for _, r := range rows {
		meters := make([]string, 0, len(r.Spent))
		for m := range r.Spent {
			meters = append(meters, string(m))
		}
		sort.Strings(meters)
		for _, m := range meters {
			limit := "-"
			if v, ok := r.Limits[capability.Meter(m)]; ok {
				limit = fmt.Sprint(v)
			}
			fmt.Fprintf(tw, "%s\t%s\t%g\t%s\n", r.Account, m, r.Spent[capability.Meter(m)], limit)
		}
	}
	return tw.Flush()
}

// quotaErr says what to do when a serving node holds the ledger.
func quotaErr(err error) error {
	if errors.Is(err, capability.ErrLedgerBusy) {
		return fmt.Errorf("%w; a node serving this tool root keeps the quota file open: stop it (SIGTERM), then run the command again", err)
	}
	return err
}

// quotaHint adds, to a refusal by a quota, that use is kept across
// invocations and how to clear it.
func quotaHint(err error) error {
	var qe *capability.QuotaError
	if err == nil || !errors.As(err, &qe) && !strings.Contains(err.Error(), "quota:") {
		return err
	}
	if qe != nil && !slices.Contains(capability.Cumulative, qe.Meter) {
		return err
	}
	return fmt.Errorf("%w (quota use is kept in %s across invocations: see it with 'agentos quota', clear it with 'agentos quota reset')", err, host.QuotaFile)
}
