package scenario

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/internal/samples"
)

// The tool of the gate scenarios: it sums the numbers of a file, one a
// line, and has a bug (it skips the first line, as if it were a header).
const (
	GateTool  = "tools/stats/sum.ts"
	GateBuggy = `/** Sums the numbers of a file, one a line. */
export default async function (args: { file: string }): Promise<number> {
  const text: string = await tgp.read_file(args.file);
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  let total = 0;
  for (let i = 1; i < lines.length; i++) {
    total += Number(lines[i]);
  }
  return total;
}
`
)

// WriteFib writes the sample fib tool (samples.FibPath) through rt's
// write_file, as an agent would.
func WriteFib(t testing.TB, rt *host.Runtime) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"path": samples.FibPath, "content": samples.FibTool})
	if _, err := rt.Call(context.Background(), "write_file", args); err != nil {
		t.Fatal(err)
	}
}
