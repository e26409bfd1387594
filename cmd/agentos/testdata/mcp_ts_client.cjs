// mcp_ts_client.cjs drives agentos' MCP server with the official
// TypeScript SDK's client (@modelcontextprotocol/sdk), for
// serve_mcp_ts_test.go. Run with NODE_PATH at the SDK's node_modules:
//
//   node mcp_ts_client.cjs stdio   (AGENTOS_BIN, AGENTOS_ROOT: spawns 'agentos serve --mcp')
//   node mcp_ts_client.cjs http    (MCP_URL, MCP_TOKEN: streamable HTTP with a bearer token)
//
// It prints one JSON object: what each step saw. The Go test judges it.
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ToolListChangedNotificationSchema, ElicitRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

const mode = process.argv[2];
const WAIT_MS = 60000;

function text(res) {
  return (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

function withTimeout(p, what) {
  let timer;
  const t = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error("timed out waiting for " + what)), WAIT_MS); });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

async function main() {
  const out = { mode, calls: {} };
  const elicit = mode === "stdio"; // the stdio client confirms; the HTTP one cannot
  const client = new Client({ name: "ts-test", version: "1.0.0" }, { capabilities: elicit ? { elicitation: {} } : {} });
  out.asked = [];
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      out.asked.push(req.params.message);
      return { action: "accept", content: { confirm: true } };
    });
  }
  let changed = null;
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => { if (changed) changed(); });

  let transport;
  if (mode === "stdio") {
    transport = new StdioClientTransport({
      command: process.env.AGENTOS_BIN,
      args: ["serve", "--mcp", "--root", process.env.AGENTOS_ROOT],
      env: { ...process.env, AGENTOS_CLI_CHILD: "1" },
      stderr: "inherit",
    });
  } else {
    transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
      requestInit: { headers: { Authorization: "Bearer " + process.env.MCP_TOKEN } },
    });
  }
  await client.connect(transport);
  out.server = client.getServerVersion().name;
  out.listChangedCap = !!(client.getServerCapabilities().tools || {}).listChanged;
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();

  const call = async (name, args) => {
    const res = await client.callTool({ name, arguments: args });
    out.calls[name] = { isError: !!res.isError, text: text(res).slice(0, 300), structured: res.structuredContent };
    return res;
  };
  const fib = "/** Returns the n-th Fibonacci number. */\nexport default function fib(args: { n: number }): number {\n  let a = 0, b = 1;\n  for (let i = 0; i < args.n; i++) { const t = a + b; a = b; b = t; }\n  return a;\n}\n";
  await call("write_file", { path: "tools/math/fib.ts", content: fib });
  await call("read_file", { path: "tools/math/fib.ts" });
  await call("list_files", { dir: "tools" });
  await call("patch_file", { path: "tools/math/fib.ts", search: "Returns", replace: "Computes" });
  await call("check_tool", { path: "tools/math/fib.ts" });
  await call("search_tools", { query: "fibonacci" });
  await call("exec_tool", { path: "tools/math/fib.ts", args: { n: 10 } });
  await call("exec_sql", { sql: "SELECT 1 AS one" });
  await call("forge_tool", { spec: "add two numbers" });
  await call("remember", { text: "The MCP client remembers this.", tags: ["mcp"] });
  await call("recall", { query: "what does the MCP client remember" });
  await call("forget", { id: "1" });

  const failing = await client.callTool({ name: "read_file", arguments: { path: "tools/none.ts" } });
  out.failing = { isError: !!failing.isError, text: text(failing), structured: failing.structuredContent };

  // list_changed after a write, then a call of the new tool.
  const gotChange = new Promise((resolve) => { changed = resolve; });
  await client.callTool({ name: "write_file", arguments: { path: "tools/text/shout.ts", content: "/** Upper-cases a text. */\nexport default function shout(args: { s: string }): { loud: string } {\n  return { loud: args.s.toUpperCase() };\n}\n" } });
  await withTimeout(gotChange, "tools/list_changed");
  out.toolsAfter = (await client.listTools()).tools.map((t) => t.name).sort();
  const shout = await client.callTool({ name: "text_shout", arguments: { s: "hi" } });
  out.shout = { isError: !!shout.isError, structured: shout.structuredContent, text: text(shout) };

  // Cancellation: abort a spinning run once it reported progress.
  const spin = "/** Spins until cancelled. */\nexport default function spin(args: { n: number }): number {\n  let i = args.n;\n  while (i >= 0) { i = i + 1; }\n  return i;\n}\n";
  await client.callTool({ name: "write_file", arguments: { path: "tools/spin.ts", content: spin } });
  const ac = new AbortController();
  out.progress = [];
  try {
    await client.callTool({ name: "exec_tool", arguments: { path: "tools/spin.ts", args: { n: 1 } } }, undefined, {
      signal: ac.signal,
      timeout: WAIT_MS,
      onprogress: (p) => { out.progress.push(p.message || ""); ac.abort("enough"); },
    });
    out.cancel = "not cancelled";
  } catch (e) {
    out.cancel = String(e && (e.message || e));
  }
  // The session still works after the cancellation.
  const after = await client.callTool({ name: "list_files", arguments: { dir: "tools" } });
  out.afterCancel = !after.isError;

  // A high-risk tool: confirmed over stdio (elicitation), refused over HTTP.
  const risky = "/** Doubles a number. @ignore-security */\nexport default function double(args: { n: number }): number {\n  return args.n * 2;\n}\n";
  await client.callTool({ name: "write_file", arguments: { path: "tools/risky.ts", content: risky } });
  const r = await client.callTool({ name: "risky", arguments: { n: 21 } });
  out.risky = { isError: !!r.isError, text: text(r) };

  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => {
  process.stderr.write("mcp_ts_client: " + (e && e.stack ? e.stack : e) + "\n");
  process.exit(1);
});
