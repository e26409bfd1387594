package forge

import (
	"encoding/json"

	"github.com/agentos-run/agentos/driver/llm"
)

// systemPrompt states the protocol and the standards check_tool enforces,
// so the model's first attempt can pass.
const systemPrompt = `You forge TypeScript tools for agentos. Answer ONLY by calling submit_tool with:
- path: where the tool lives, tools/<area>/<name>.ts (lowercase, e.g. tools/math/fib.ts);
- code: the tool;
- tests: its tests.

The tool MUST:
1. start with a JSDoc comment (/** ... */) saying in one sentence what it does, optionally with @tag lines;
2. have exactly one default export: export default function <name>(args: { ... }): <ReturnType> (async is fine), with every argument typed;
3. never use the type any; name every numeric constant other than -1, 0, 1, 2 (const MAX_ITEMS = 100);
4. never hard-code emails, passwords, keys or tokens;
5. never use process, eval, new Function, or .constructor tricks; import other tools only as /lib/<path under tools> (e.g. require('/lib/text/slug'));
6. reach the outside only through tgp: await tgp.read_file(path), tgp.write_file(path, content), tgp.list_files(dir), tgp.exec_sql(sql, params) (rows come back as {rows: [{column: value}]}), tgp.fetch(url, init); log with tgp.log(...);
7. validate its arguments and throw an Error with a clear message on bad input.

The tests MUST be TypeScript that loads the tool with const tool = require('./<name>').default; and has
export default async function (): Promise<void> { ... } which calls the tool on representative and edge cases
and throws an Error naming the case, the expected and the actual value at the first mismatch.

When an attempt fails you get the exact check or test errors: fix them all and submit the whole tool and tests again.
Do not write one-off scripts: a tool is reused by other agents.`

// submitTool is the one tool the model calls.
var submitTool = llm.ToolSpec{
	Name:        "submit_tool",
	Description: "Submit a TypeScript tool and its tests.",
	// Keys sorted, no space: the journal records the request as it comes.
	Parameters: json.RawMessage(`{"additionalProperties":false,"properties":{` +
		`"code":{"description":"The tool's TypeScript source.","type":"string"},` +
		`"path":{"description":"tools/<area>/<name>.ts","type":"string"},` +
		`"tests":{"description":"The tests' TypeScript source.","type":"string"}},` +
		`"required":["path","code","tests"],"type":"object"}`),
}
