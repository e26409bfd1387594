package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentos-run/agentos/actors/executor"
)

// A tool is a TypeScript file with a default export; Exec runs it with JSON
// args and returns its JSON result and logs.
func ExampleExecutor_Exec() {
	root, _ := os.MkdirTemp("", "agentos-example-")
	defer os.RemoveAll(root)
	os.MkdirAll(filepath.Join(root, "tools"), 0o755)
	os.WriteFile(filepath.Join(root, "tools", "greet.ts"), []byte(`
export default function (args: { name: string }) {
  tgp.log('greeting', args.name);
  return { greeting: 'hello, ' + args.name };
}
`), 0o644)

	ex, err := executor.New(executor.Options{Root: root, Isolation: executor.IsolationInProcess})
	if err != nil {
		panic(err)
	}
	defer ex.Close()
	res := ex.Exec(context.Background(), executor.Request{Path: "tools/greet.ts", Args: json.RawMessage(`{"name": "ada"}`)})
	fmt.Println(res.Success, string(res.Result), res.Logs)
	// Output: true {"greeting":"hello, ada"} [greeting ada]
}

// A tool that never returns is stopped at its deadline with a timeout error;
// the executor goes on serving.
func ExampleExecutor_Exec_timeout() {
	root, _ := os.MkdirTemp("", "agentos-example-")
	defer os.RemoveAll(root)
	os.MkdirAll(filepath.Join(root, "tools"), 0o755)
	os.WriteFile(filepath.Join(root, "tools", "spin.ts"), []byte("export default () => { for (;;) {} };\n"), 0o644)

	ex, _ := executor.New(executor.Options{Root: root, Isolation: executor.IsolationInProcess, Limits: executor.Limits{Timeout: 50e6}})
	defer ex.Close()
	res := ex.Exec(context.Background(), executor.Request{Path: "tools/spin.ts"})
	fmt.Println(res.Success, res.Error.Kind)
	// Output: false timeout
}
