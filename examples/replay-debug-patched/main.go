// Command replay-debug-patched debugs a bad tool the way `agentos replay
// RUN --tool fixed.ts` does: it records a run of a buggy tool that fetches
// prices from a (loopback) price service, shuts the service down, and
// replays the run offline from the journal: first the recorded source (same
// wrong result), then a patched source fed the very same recorded answers
// (the right result), then a "fix" that asks for more than the run did
// (a divergence report).
//
//	go run ./examples/replay-debug-patched
//
// It exits 1 if any replay does not behave as described.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/journal"
)

// buggy adds the prices as they come: strings, so + concatenates them.
const buggy = `/** Totals the prices of a basket from the price service. */
export default async function (a: { url: string }): Promise<number> {
  const r = await tgp.fetch(a.url, {});
  const items: { item: string; price: string }[] = JSON.parse(r.body);
  let total: any = 0;
  for (const i of items) total = total + i.price;
  return total;
}
`

// fixed parses each price first.
const fixed = `/** Totals the prices of a basket from the price service. */
export default async function (a: { url: string }): Promise<number> {
  const r = await tgp.fetch(a.url, {});
  const items: { item: string; price: string }[] = JSON.parse(r.body);
  let total = 0;
  for (const i of items) total = total + Number(i.price);
  return total;
}
`

// chatty "fixes" it by fetching the prices a second time: a replay cannot
// answer a call the run never made.
const chatty = `/** Totals the prices of a basket from the price service. */
export default async function (a: { url: string }): Promise<number> {
  await tgp.fetch(a.url, {});
  const r = await tgp.fetch(a.url, {});
  const items: { item: string; price: string }[] = JSON.parse(r.body);
  return items.reduce((t, i) => t + Number(i.price), 0);
}
`

func main() {
	executor.WorkerMain() // MUST come first: sandbox workers are this binary re-executed
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("OK: recorded once, replayed offline three times")
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := os.MkdirTemp("", "agentos-replay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	if err := os.MkdirAll(filepath.Join(root, "tools"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "tools", "total.ts"), []byte(buggy), 0o644); err != nil {
		return err
	}

	// The price service, on loopback.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`[{"item":"tea","price":"1.50"},{"item":"cake","price":"2.25"}]`))
	}))
	url := srv.URL + "/v1/basket"

	// The same executor and journal every CLI command builds.
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	cfg := host.Config{Root: root, Logger: quiet, Fetch: host.FetchConfig{Allow: []string{srv.URL + "/v1/"}}}
	setup, err := cfg.OpenExecutorSetup(root, quiet)
	if err != nil {
		return err
	}
	defer setup.Close()
	ex, err := setup.NewExecutor(nil)
	if err != nil {
		return err
	}
	defer ex.Close()
	j, err := cfg.OpenJournal(root, "")
	if err != nil {
		return err
	}
	defer j.Close()

	// 1. Record: the tool runs live and every driver call is journaled.
	args, _ := json.Marshal(map[string]string{"url": url})
	res, runID, err := executor.Record(ctx, ex, j, executor.Request{Path: "tools/total.ts", Args: args})
	if err != nil {
		return err
	}
	if !res.Success || string(res.Result) != `"01.502.25"` {
		return fmt.Errorf("the recorded run should show the bug (\"01.502.25\"), got %s %+v", res.Result, res.Error)
	}
	fmt.Printf("recorded run %s: result %s (wrong: the prices were concatenated)\n", runID, res.Result)

	// Offline from here on: the price service is gone.
	srv.Close()

	// 2. Replay the recorded source: same calls, same wrong result.
	rep, err := executor.ReplayWith(ctx, ex, j, runID, execclient.ReplayOptions{})
	if err != nil {
		return err
	}
	if rep.Divergence != nil || !rep.Same {
		return fmt.Errorf("replaying the recorded source: same=%v divergence=%v", rep.Same, rep.Divergence)
	}
	fmt.Printf("replay (recorded source): result %s, same as recorded: %v\n", rep.Result.Result, rep.Same)

	// 3. Replay the fix against the recorded I/O.
	rep, err = executor.ReplayWith(ctx, ex, j, runID, execclient.ReplayOptions{Patched: []byte(fixed)})
	if err != nil {
		return err
	}
	if rep.Divergence != nil || !rep.Result.Success || string(rep.Result.Result) != "3.75" {
		return fmt.Errorf("replaying the fix: result %s %+v, divergence %v", rep.Result.Result, rep.Result.Error, rep.Divergence)
	}
	fmt.Printf("replay (patched source):  result %s, patched: %v, same as recorded: %v, divergence: none\n", rep.Result.Result, rep.Patched, rep.Same)

	// 4. A patch that makes a call the run never made diverges.
	rep, err = executor.ReplayWith(ctx, ex, j, runID, execclient.ReplayOptions{Patched: []byte(chatty)})
	if err != nil {
		return err
	}
	if rep.Divergence == nil || rep.Divergence.Code != journal.CodeBeyondEnd {
		return fmt.Errorf("replaying a patch with an extra fetch: want divergence %s, got %v", journal.CodeBeyondEnd, rep.Divergence)
	}
	var div *journal.DivergenceError
	if !errors.As(rep.Divergence, &div) {
		return fmt.Errorf("the divergence is not a *journal.DivergenceError")
	}
	fmt.Printf("replay (chatty patch):    divergence %s\n", div.Error())
	return nil
}
