package check_test

import (
	"fmt"

	"github.com/agentos-run/agentos/actors/forge/check"
)

func ExampleChecker_Check() {
	c := check.New(check.Options{AllowedImports: []string{"zod"}})

	src := `import { z } from 'zod';
import { execSync } from 'child_process';

/** Greets a user. */
export default function greet(args: { name: string }): string {
  const extra: any = process.env.GREETING;
  return "Hello " + args.name + extra + 42;
}
`
	r := c.Check("tools/greet.ts", []byte(src))
	fmt.Println("valid:", r.Valid, "risk:", r.Risk)
	for _, f := range r.Errors {
		fmt.Println(f) // the "line:col rule: message" form an LLM reads
	}
	for _, f := range r.Risks {
		fmt.Printf("%s at %d:%d: %s\n", f.Level, f.Line, f.Column, f.Reason)
	}
	// Output:
	// valid: false risk: critical
	// 2:26 allowed-imports: Node built-in module 'child_process' does not exist in the sandbox: the tgp bridge is the way out (tgp.read_file, tgp.write_file, tgp.list_files, tgp.fetch, tgp.exec_sql); tools cannot run programs: do the work in TypeScript
	// 6:16 no-any: 'any' turns off type checking: use 'unknown' and narrow it, or write the specific type
	// 6:22 no-process: 'process' does not exist in the sandbox: read inputs from args (the tool's parameter) and reach the outside only through tgp
	// 7:41 no-magic-numbers: Found magic number 42: pass it as an argument (args.x) or name it in the tool's parameters
	// critical at 2:26: imports 'child_process': it runs programs or code
	// medium at 6:22: reads environment variables (process.env)
}
