package kerneltools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentos-run/agentos/actors/executor"
	execclient "github.com/agentos-run/agentos/actors/executor/client"
	"github.com/agentos-run/agentos/actors/forge"
	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/actors/forge/forgerun"
	gitclient "github.com/agentos-run/agentos/actors/git/client"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/actors/kernel/proc"
	"github.com/agentos-run/agentos/actors/registry"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/governance/approval"
	"github.com/agentos-run/agentos/internal/clip"
	"github.com/agentos-run/agentos/kerneltool"
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
	"github.com/google/jsonschema-go/jsonschema"
)

// DefaultMaxArgsBytes bounds a kernel tool call's arguments (their JSON
// text) when Options.MaxArgsBytes is 0: 4 MiB.
const DefaultMaxArgsBytes = 4 << 20

// MaxPathBytes bounds a path or directory argument of a kernel tool: a
// longer one is refused before it is cleaned, checked or quoted.
const MaxPathBytes = 1024

// toolDef is a tool before it is bound to a process. Its argument struct
// (args) is the one source of truth for its parameters: the JSON Schema an
// LLM sees (schema), the parameter names an error lists (params) and the
// required ones (required) are all derived from it, once, at init.
type toolDef struct {
	name, desc string
	// args is the tool's argument struct type: one field per parameter,
	// named by its json tag, described by its jsonschema tag; a field
	// without omitempty is required. Its fields' types give the schema
	// types (see argTypeSchemas for the ones that are not plain Go types).
	args reflect.Type
	call func(n *Node, ctx context.Context, p *kernel.Process, args json.RawMessage) (any, error)

	schema   json.RawMessage // generated from args
	params   string          // "path, args": the parameters, in field order
	required []string        // the fields without omitempty
}

// The argument structs of the kernel tools, one per tool. IMPORTANT: they
// ARE the tools' parameters: a field added here is a parameter the schema
// announces and decode accepts; a field without omitempty is required.

type listFilesArgs struct {
	Dir string `json:"dir" jsonschema:"Directory relative to the tool root, e.g. tools or tools/math; /mcp lists the MCP servers, /mcp/<server> their tools' modules."`
}

type readFileArgs struct {
	Path string `json:"path" jsonschema:"File path relative to the tool root, e.g. tools/math/fib.ts, or an MCP tool's module /mcp/<server>/<tool>.ts."`
}

type writeFileArgs struct {
	Path    string `json:"path" jsonschema:"File path relative to the tool root."`
	Content string `json:"content" jsonschema:"The whole new content."`
}

type patchFileArgs struct {
	Path    string `json:"path" jsonschema:"File path relative to the tool root."`
	Search  string `json:"search" jsonschema:"Exact text to replace (first occurrence)."`
	Replace string `json:"replace" jsonschema:"Replacement text."`
}

type checkToolArgs struct {
	Path string `json:"path" jsonschema:"Tool path relative to the tool root."`
}

type execSQLArgs struct {
	SQL    string    `json:"sql" jsonschema:"Exactly one statement, e.g. SELECT name FROM users WHERE plan = ?"`
	Params sqlParams `json:"params,omitempty" jsonschema:"Values for the placeholders: an array in order (? or $1), or an object by name (:name, SQLite only)."`
}

type searchToolsArgs struct {
	Query  string       `json:"query" jsonschema:"What the tool should do, in words, e.g. compound interest calculator."`
	Limit  searchLimit  `json:"limit,omitempty" jsonschema:"How many results at most (default 10)."`
	Detail searchDetail `json:"detail,omitempty" jsonschema:"'full' (default): each result with its parameters' JSON Schema, tags and usage; 'brief': only path, name, a one-line summary and score (read_file the path for the rest)."`
}

type forgeToolArgs struct {
	Spec string `json:"spec" jsonschema:"What the tool must do: inputs, output, edge cases."`
}

type execToolArgs struct {
	Path string          `json:"path" jsonschema:"Tool path relative to the tool root, e.g. tools/x.ts; tools/x.ts@<hash> (at least 8 hex digits of a recorded content hash) runs that recorded version."`
	Args json.RawMessage `json:"args,omitempty" jsonschema:"The object passed to the tool's default export."`
	// Placement is where the run executes in a cluster (see placement).
	Placement string `json:"placement,omitempty" jsonschema:"In a cluster: where the run executes: 'local' (this node), 'spread' (another node when this one is busy), or a node's address. Default: this node unless it is saturated."`
}

// sqlParams is exec_sql's params as the caller wrote them: an array or an
// object, read by driver.SQLRequest.
type sqlParams json.RawMessage

// UnmarshalJSON keeps the value as written.
func (s *sqlParams) UnmarshalJSON(b []byte) error {
	*s = append((*s)[:0], b...)
	return nil
}

// searchDetail is search_tools' detail: "full" (or "") or "brief".
type searchDetail string

// searchLimit is search_tools' limit: between minSearchLimit and
// maxSearchLimit, or 0 for defaultSearchLimit.
type searchLimit int

const (
	minSearchLimit     = 1
	maxSearchLimit     = 100
	defaultSearchLimit = 10
)

// argTypeSchemas are the schemas of the argument types that are not plain
// Go types: exec_tool's args (the only json.RawMessage argument) is an
// object, exec_sql's params an array or an object, search_tools' limit a
// bounded integer.
var argTypeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {Type: "object"},
	reflect.TypeFor[sqlParams]():       {Types: []string{"array", "object"}},
	reflect.TypeFor[searchLimit]():     {Type: "integer", Minimum: jsonschema.Ptr[float64](minSearchLimit), Maximum: jsonschema.Ptr[float64](maxSearchLimit)},
	reflect.TypeFor[searchDetail]():    {Type: "string", Enum: []any{"full", "brief"}},
	reflect.TypeFor[memoryKind]():      {Type: "string", Enum: []any{"fact", "lesson", "preference"}},
	reflect.TypeFor[recallKind]():      {Type: "string", Enum: []any{"fact", "lesson", "preference", "page"}},
	reflect.TypeFor[memoryTags]():      {Type: "array", Items: &jsonschema.Schema{Type: "string"}},
}

var toolDefs = []toolDef{
	{
		name: "list_files",
		desc: "List the files under a directory of the tool root, recursively. Returns paths relative to the tool root.",
		args: reflect.TypeFor[listFilesArgs](),
		call: (*Node).listFiles,
	},
	{
		name: "read_file",
		desc: "Read a file of the tool root and return its content.",
		args: reflect.TypeFor[readFileArgs](),
		call: (*Node).readFile,
	},
	{
		name: "write_file",
		desc: "Create or replace a file of the tool root (a TypeScript tool under tools/, with its JSDoc description on top).",
		args: reflect.TypeFor[writeFileArgs](),
		call: (*Node).writeFile,
	},
	{
		name: "patch_file",
		desc: "Replace the first occurrence of a search text in a file. Fails, naming the file, when the search text is absent; read the file first and copy the text exactly.",
		args: reflect.TypeFor[patchFileArgs](),
		call: (*Node).patchFile,
	},
	{
		name: "check_tool",
		desc: "Check a TypeScript tool on its syntax tree: syntax, no any, no magic numbers, no secrets, no eval or dynamic code, allowed imports, default export. Returns {valid, errors[], warnings[], risk} with line:column positions. A compile error the syntax tree cannot show (a name declared twice, a break outside a loop) is reported by the first exec_tool of the source and by check_tool after it.",
		args: reflect.TypeFor[checkToolArgs](),
		call: (*Node).checkTool,
	},
	{
		name: "exec_sql",
		desc: "Run one SQL statement on the database, with parameters bound (? or $1 placeholders, or :name on SQLite), in its own transaction. One statement per call; no transaction control, ATTACH or settings. Returns {columns, rows} for a query, {rows_affected} otherwise.",
		args: reflect.TypeFor[execSQLArgs](),
		call: (*Node).execSQL,
	},
	{
		name: "search_tools",
		desc: "Search the registered tools (and the MCP servers' tools under /mcp) by what they do. Returns the best matches first, each with {path, name, description, parameters, tags, usage, score}, or with detail 'brief' only {path, name, summary, score}; a score near 1 means the tool fits: reuse it instead of writing a new one.",
		args: reflect.TypeFor[searchToolsArgs](),
		call: (*Node).searchTools,
	},
	{
		name: "forge_tool",
		desc: "Get a tool for a spec: reuse a registered one that fits (score >= 0.85), or have one written with its tests, checked, tested and registered. Returns {reused, path, score, attempts[], commit}. Prefer this to writing one-off code.",
		args: reflect.TypeFor[forgeToolArgs](),
		call: (*Node).forgeTool,
	},
	{
		name: "exec_tool",
		desc: "Run a TypeScript tool in the sandbox with JSON arguments. Returns {success, result, logs[], error}; the run is journaled and replayable.",
		args: reflect.TypeFor[execToolArgs](),
		call: (*Node).execTool,
	},
	{
		name: "remember",
		desc: "Keep a fact, a lesson or a preference in your long-term memory: it survives this conversation and restarts, and recall finds it later. The same text is kept once. Returns {id, kind, duplicate}.",
		args: reflect.TypeFor[rememberArgs](),
		call: (*Node).remember,
	},
	{
		name: "recall",
		desc: "Search your long-term memory (facts, lessons, preferences) and the turns of this conversation paged out of your context window, by relevance. Returns the best items first, each {id, kind, text, tags, score}. With agent set, searches that agent's memory (if you hold the right).",
		args: reflect.TypeFor[recallArgs](),
		call: (*Node).recall,
	},
	{
		name: "forget",
		desc: "Delete one item of your memory by its id (as remember or recall gave it).",
		args: reflect.TypeFor[forgetArgs](),
		call: (*Node).forget,
	},
}

// schemaDefs is toolDefs for deriveSchemas, set by init (a pointer, nothing
// computed): deriveSchemas referring to toolDefs directly would be an
// initialisation cycle, since toolDefs' functions decode their arguments.
var schemaDefs *[]toolDef

func init() { schemaDefs = &toolDefs }

// toolArgs finds a tool's definition by its argument struct type (decode).
var toolArgs = map[reflect.Type]*toolDef{}

// deriveSchemas generates every tool's schema, parameter list and required
// list from its argument struct, once, on first use: not at package
// initialisation, which every start of the binary (a sandbox worker,
// `agentos help`) would pay for ~1 ms. The structs are fixed at compile
// time: a failure is a programming error, caught by any test of the
// package. IMPORTANT: everything that reads a toolDef's schema, params or
// required, or toolArgs, MUST call it first.
var deriveSchemas = sync.OnceFunc(func() {
	defs := *schemaDefs
	for i := range defs {
		d := &defs[i]
		s, err := jsonschema.ForType(d.args, &jsonschema.ForOptions{TypeSchemas: argTypeSchemas})
		if err != nil {
			panic(fmt.Sprintf("node: the schema of %s's arguments (%s): %v", d.name, d.args, err))
		}
		if d.schema, err = json.Marshal(s); err != nil {
			panic(fmt.Sprintf("node: the schema of %s's arguments (%s): %v", d.name, d.args, err))
		}
		d.params = strings.Join(s.PropertyOrder, ", ")
		d.required = s.Required
		if _, dup := toolArgs[d.args]; dup {
			panic(fmt.Sprintf("node: %s shares its argument struct %s with another tool; give each tool its own", d.name, d.args))
		}
		toolArgs[d.args] = d
	}
})

// ToolNames lists the kernel tools this node serves, in order.
func ToolNames() []string {
	out := make([]string, len(toolDefs))
	for i, d := range toolDefs {
		out[i] = d.name
	}
	return out
}

// Tools returns the kernel tools bound to p: each call runs with p's
// capabilities and is charged to p's quota. names selects tools (none: all).
func (n *Node) Tools(handle proc.Process, names ...string) ([]kerneltool.Tool, error) {
	p, err := n.process(handle)
	if err != nil {
		return nil, err
	}
	deriveSchemas()
	var out []kerneltool.Tool
	for _, name := range names {
		if findTool(name) == nil {
			return nil, unknownTool(name)
		}
	}
	for _, d := range toolDefs {
		if len(names) > 0 && !slices.Contains(names, d.name) {
			continue
		}
		out = append(out, kerneltool.Tool{
			Name: d.name, Description: d.desc, Parameters: d.schema,
			Call: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				return n.Call(ctx, p, d.name, args)
			},
		})
	}
	return out, nil
}

func findTool(name string) *toolDef {
	deriveSchemas()
	for i := range toolDefs {
		if toolDefs[i].name == name {
			return &toolDefs[i]
		}
	}
	return nil
}

func unknownTool(name string) error {
	return fmt.Errorf("%w %q: the kernel tools are %s", kerneltool.ErrUnknownTool, clip.Text(name), strings.Join(ToolNames(), ", "))
}

// Call runs the kernel tool name for p with args (a JSON object) and returns
// its JSON result: exactly what an LLM tool call does.
func (n *Node) Call(ctx context.Context, handle proc.Process, name string, args json.RawMessage) (json.RawMessage, error) {
	p, err := n.process(handle)
	if err != nil {
		return nil, err
	}
	d := findTool(name)
	if d == nil {
		// A call to no tool is a refused call like any other: it is charged.
		if err := p.Charge(capability.ToolCalls, 1); err != nil {
			return nil, err
		}
		return nil, unknownTool(name)
	}
	ctx, span := n.tel.start(ctx, p, name)
	start := time.Now()
	out, err := n.call(ctx, p, d, args)
	n.tel.end(ctx, span, name, start, err)
	return out, err
}

// maxErrorBytes bounds the message of a kernel call's error: the values it
// quotes are clipped where they are quoted, and this is the backstop.
const maxErrorBytes = 4096

func (n *Node) call(ctx context.Context, p *kernel.Process, d *toolDef, args json.RawMessage) (json.RawMessage, error) {
	if err := p.Gate(ctx); err != nil {
		return nil, err
	}
	// IMPORTANT: every call is charged before it is examined, refused or
	// not: a flood of refused calls uses the caller's quota up instead of
	// costing nothing.
	if err := p.Charge(capability.ToolCalls, 1); err != nil {
		return nil, fmt.Errorf("%s: %w", d.name, err)
	}
	if limit := n.maxArgs(); len(args) > limit {
		return nil, fmt.Errorf("%s: %w: %w: the arguments are %d bytes, over the node's limit of %d; send less (write large data in several files), or raise limits.max_args_bytes in agentos.json (Options.MaxArgsBytes)", d.name, kerneltool.ErrInvalidArgs, ErrArgsTooLarge, len(args), limit)
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	res, err := d.call(n, ctx, p, args)
	if err != nil {
		return nil, clip.Error(fmt.Errorf("%s: %w", d.name, err), maxErrorBytes)
	}
	return json.Marshal(res)
}

// maxArgs is the node's limit on a call's arguments.
func (n *Node) maxArgs() int {
	if n.opts.MaxArgsBytes > 0 {
		return n.opts.MaxArgsBytes
	}
	return DefaultMaxArgsBytes
}

// checkPathLen refuses a path argument longer than MaxPathBytes, quoting
// only its start.
func checkPathLen(param, path string) error {
	if len(path) > MaxPathBytes {
		return fmt.Errorf("%w: %s %q is %d bytes long; paths are at most %d bytes", kerneltool.ErrInvalidArgs, param, clip.N(path, 64), len(path), MaxPathBytes)
	}
	return nil
}

// decode reads args strictly into v, a pointer to a tool's argument struct
// (toolDefs): unknown or missing parameters are errors that name the
// parameters, all derived from the struct.
func decode(args json.RawMessage, v any) error {
	deriveSchemas()
	d := toolArgs[reflect.TypeOf(v).Elem()]
	if d == nil {
		return fmt.Errorf("node: %T is no kernel tool's argument struct; list it in toolDefs", v)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(args, &probe); err != nil {
		return fmt.Errorf("%w: the arguments must be a JSON object with %s (%s)", kerneltool.ErrInvalidArgs, d.params, clip.Text(err.Error()))
	}
	for _, r := range d.required {
		if _, ok := probe[r]; !ok {
			return fmt.Errorf("%w: missing parameter %q (parameters: %s)", kerneltool.ErrInvalidArgs, r, d.params)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// An unknown parameter's name is quoted: clip it.
		return fmt.Errorf("%w: %s (parameters: %s)", kerneltool.ErrInvalidArgs, clip.Text(err.Error()), d.params)
	}
	return nil
}

// authorizeResolved cleans path, resolves it through the tool root's
// symbolic links (vfs.Jail.Resolve), checks right on where it leads and
// returns the resolved path: the one the call MUST then use. IMPORTANT:
// every right on a file is checked on the resolved path, never the lexical
// one, or a link tools/pub/x -> ../priv/y would pass a "tools/pub/" scope.
// The call was charged already (Node.call).
func (n *Node) authorizeResolved(p *kernel.Process, right capability.Right, path string) (string, error) {
	if err := checkPathLen("path", path); err != nil {
		return "", err
	}
	resolved, err := n.opts.Jail.Resolve(path)
	if err != nil {
		return "", err
	}
	return resolved, permitResolved(p, right, path, resolved)
}

// readEntry checks p's exec right on the tool asked where its links lead
// (as authorizeResolved) and reads it in the same walk of the jail: the
// one read of the entry that the approval gate judges and the run executes
// (RunRequest.Source), so that they cannot see two versions. src is nil
// for a recorded version (versioned: the journal holds it) and when the
// file cannot be read (missing: the gate and the run report it, after
// pulling a tool another node wrote, as without this read).
func (n *Node) readEntry(p *kernel.Process, asked string, versioned bool) (path string, src []byte, err error) {
	if versioned {
		path, err = n.authorizeResolved(p, capability.Exec, asked)
		return path, nil, err
	}
	if err := checkPathLen("path", asked); err != nil {
		return "", nil, err
	}
	var refused error
	src, path, err = n.opts.Jail.ReadFileResolved(asked, func(r string) error {
		refused = permitResolved(p, capability.Exec, asked, r)
		return refused
	})
	switch {
	case refused != nil:
		return "", nil, refused
	case path == "":
		return "", nil, err // it does not resolve inside the jail
	case err != nil:
		return path, nil, nil
	}
	return path, src, nil
}

// permitResolved is permit on resolved, the path asked resolves to; a
// refusal says where a link led.
func permitResolved(p *kernel.Process, right capability.Right, asked, resolved string) error {
	if err := permit(p, right, resolved); err != nil {
		if clean, _ := vfs.Clean(asked); clean != resolved {
			return fmt.Errorf("%s resolves (through a symbolic link) to %s: %w", clean, resolved, err)
		}
		return err
	}
	return nil
}

// permit checks right on an already clean resource and counts the call as
// performed (ps). The call was charged already (Node.call).
func permit(p *kernel.Process, right capability.Right, resource string) error {
	if err := p.Check(right, resource); err != nil {
		return err
	}
	p.CountCall()
	return nil
}

func (n *Node) listFiles(ctx context.Context, p *kernel.Process, args json.RawMessage) (any, error) {
	var a listFilesArgs
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	if err := n.syncTools(ctx); err != nil {
		return nil, err
	}
	if err := checkPathLen("dir", a.Dir); err != nil {
		return nil, err
	}
	dir := a.Dir
	if isMCPPath(dir) {
		return n.listMCP(ctx, p, dir)
	}
	if dir == "" || dir == "/" {
		dir = "."
	}
	asked := dir
	dir, err := n.opts.Jail.Resolve(dir)
	if err != nil {
		return nil, err
	}
	// A directory is read as the scope of its contents: "tools/" grants
	// listing tools; listing the root needs a grant on everything. Both on
	// where the directory resolves.
	resource := ""
	if dir != "." {
		resource = dir + "/"
	}
	if err := permit(p, capability.Read, resource); err != nil {
		if clean, _ := vfs.Clean(asked); clean != dir {
			return nil, fmt.Errorf("%s resolves (through a symbolic link) to %s: %w", clean, dir, err)
		}
		return nil, err
	}
	entries, err := n.opts.Jail.Entries(dir)
	files := []string{}
	for _, e := range entries {
		// A link is listed only when the process may read where it leads.
		if e.Resolved == e.Path || p.Covers(capability.Read, e.Resolved) {
			files = append(files, e.Path)
		}
	}
	return files, err
}

func (n *Node) readFile(ctx context.Context, p *kernel.Process, args json.RawMessage) (any, error) {
	var a readFileArgs
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	if isMCPPath(a.Path) {
		if err := checkPathLen("path", a.Path); err != nil {
			return nil, err
		}
		return n.readMCP(ctx, p, a.Path)
	}
	if err := n.syncTools(ctx); err != nil {
		return nil, err
	}
	_, src, err := n.readPath(p, a.Path)
	if errors.Is(err, vfs.ErrNotFound) && n.pullMissing(ctx) {
		_, src, err = n.readPath(p, a.Path)
	}
	return string(src), err
}

// readPath checks the read right on path (as it resolves) and reads the
// file.
func (n *Node) readPath(p *kernel.Process, asked string) (string, []byte, error) {
	if err := checkPathLen("path", asked); err != nil {
		return "", nil, err
	}
	// One resolution for the check and the read: the right is checked on
	// the path that is then read.
	src, path, err := n.opts.Jail.ReadFileResolved(asked, func(resolved string) error {
		return permitResolved(p, capability.Read, asked, resolved)
	})
	return path, src, err
}

func (n *Node) writeFile(ctx context.Context, p *kernel.Process, args json.RawMessage) (any, error) {
	var a writeFileArgs
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	path, err := n.authorizeResolved(p, capability.Write, a.Path)
	if err != nil {
		return nil, err
	}
	g, err := n.gitAs(p)
	if err != nil {
		return nil, err
	}
	w, err := g.WriteFile(ctx, path, []byte(a.Content))
	if err != nil {
		return nil, err
	}
	return WriteResult{Written: w, Approval: n.requestApproval(p, path)}, nil
}

// gitAs is the git actor's client acting for p: every write carries p's
// token, so that the git actor checks it (write on the path) and refuses
// the node's policy and state (agentos.json, .agentos/, .git, personas/)
// whatever it grants: the one rule every write passes (git.Protected).
func (n *Node) gitAs(p *kernel.Process) (*gitclient.Client, error) {
	tok, ok := p.Token()
	if !ok {
		// The kernel's own check says why (and logs the refusal).
		return nil, p.Check(capability.Write, "")
	}
	return n.gitClient.As(tok.Encode()), nil
}

// WriteResult is write_file's and patch_file's result: the write, and,
// when the tool written needs an approval before it runs (the approval
// gate), its pending request: the tool is committed (nothing written is
// lost) but not offered by search_tools, and its runs wait, until it is
// approved.
type WriteResult struct {
	gitclient.Written
	Approval *approval.Request `json:"approval,omitempty"`
}

func (n *Node) patchFile(ctx context.Context, p *kernel.Process, args json.RawMessage) (any, error) {
	var a patchFileArgs
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	path, err := n.authorizeResolved(p, capability.Write, a.Path)
	if err != nil {
		return nil, err
	}
	g, err := n.gitAs(p)
	if err != nil {
		return nil, err
	}
	w, err := g.PatchFile(ctx, path, a.Search, a.Replace)
	if err != nil {
		return nil, err
	}
	return WriteResult{Written: w, Approval: n.requestApproval(p, path)}, nil
}

func (n *Node) checkTool(_ context.Context, p *kernel.Process, args json.RawMessage) (any, error) {
	var a checkToolArgs
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	path, src, err := n.readPath(p, a.Path)
	if err != nil {
		return nil, err
	}
	// The transpiler stays off check_tool's path: the first exec compiles
	// the source anyway (check.CheckDeferred says what that defers).
	res := n.checker.CheckDeferred(path, src)
	if !isToolSource(path, n.toolsDir()) {
		return res, nil
	}
	// The entry was just checked: its rating is res's (Risk would parse
	// it again); its modules are rated as the gate rates them.
	risk := func(p string, s []byte, hash string) Rating {
		if p == path && bytes.Equal(s, src) {
			return RatingOf(res)
		}
		return n.Risk(p, s, hash)
	}
	j, err := Judge(n.opts.Jail, n.toolsDir(), path, src, nil, nil, risk)
	if err != nil {
		return nil, fmt.Errorf("check_tool: %s: its modules cannot be rated: %w", path, err)
	}
	return WithModules(res, j), nil
}

// WithModules is check_tool's result res for a tool, rated by its modules
// too: the risk is the highest over the entry and every module it
// requires, transitively (j, the gate's judgment of the same source), and
// each module's risks are added with their Module set. What the approval
// gate holds is what check_tool says.
func WithModules(res check.Result, j Judged) check.Result {
	if len(j.Risks) == 0 {
		return res
	}
	res.Risks = append(slices.Clone(res.Risks), j.Risks...)
	if j.Risk.AtLeast(res.Risk) {
		res.Risk = j.Risk
	}
	return res
}

func (n *Node) execSQL(ctx context.Context, p *kernel.Process, args json.RawMessage) (any, error) {
	var a execSQLArgs
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	// The arguments are checked; driver.SQLRequest reads the params (an
	// array or an object of scalars).
	var req driver.SQLRequest
	if err := json.Unmarshal(args, &req); err != nil {
		return nil, fmt.Errorf("%w: %s (parameters: %s)", kerneltool.ErrInvalidArgs, clip.Text(err.Error()), toolArgs[reflect.TypeFor[execSQLArgs]()].params)
	}
	if err := permit(p, capability.SQL, ""); err != nil {
		return nil, err
	}
	if n.opts.SQL == nil {
		return nil, errors.New("no database is configured for this node (see the sql section of agentos.json)")
	}
	return n.opts.SQL.Exec(ctx, req)
}

func (n *Node) forgeTool(ctx context.Context, p *kernel.Process, args json.RawMessage) (any, error) {
	var a forgeToolArgs
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	// A forge asks the model and writes a tool: it needs both rights.
	if err := p.Check(capability.LLM, ""); err != nil {
		return nil, err
	}
	if err := permit(p, capability.Write, n.toolsDir()+"/"); err != nil {
		return nil, err
	}
	caller, err := callerOf(p)
	if err != nil {
		return nil, err
	}
	return n.forgeFor(ctx, a.Spec, caller)
}

// ResumeForge resumes the forge run id (interrupted by a crash) on behalf
// of p: the recorded model answers are replayed, then it goes on live.
func (n *Node) ResumeForge(ctx context.Context, p *kernel.Process, id string) (forge.Result, error) {
	if n.opts.LLM == nil {
		return forge.Result{}, fmt.Errorf("forge run %s cannot resume: %w", id, forge.ErrNoModel)
	}
	caller, err := callerOf(p)
	if err != nil {
		return forge.Result{}, err
	}
	if n.cluster() != nil && n.opts.Journal != nil {
		// In a cluster the spec's grain resumes it (its Pending claims the
		// run), so that no two nodes resume one forge.
		meta, err := n.opts.Journal.Get(id)
		if err != nil {
			return forge.Result{}, fmt.Errorf("forge run %s cannot resume: %w", id, err)
		}
		spec, ok := forgerun.SpecOf(meta)
		if !ok {
			return forge.Result{}, fmt.Errorf("forge run %s cannot resume: it is not a forge run with a journaled spec", id)
		}
		return n.forgeFor(ctx, spec, caller)
	}
	return n.forgeClient.Resume(ctx, id, caller)
}

// callerOf is p as the caller of a tool run or a forge: the executor actor
// gives the run exactly the rights p's token grants, checked on every file
// access and driver call, live (a token revoked when p ends refuses the
// calls from then on).
func callerOf(p *kernel.Process) (*execclient.Caller, error) {
	tok, ok := p.Token()
	if !ok {
		// The kernel's own check says why (and logs the refusal).
		return nil, p.Check(capability.Exec, "")
	}
	text, _ := p.EncodedToken() // its token never changes: the same one
	return &execclient.Caller{PID: uint64(p.PID()), Name: p.Name(), Holder: p.Holder(), Token: tok, TokenText: text}, nil
}

// SearchHit is one search_tools result.
type SearchHit = registry.Hit

func (n *Node) searchTools(ctx context.Context, p *kernel.Process, args json.RawMessage) (any, error) {
	var a searchToolsArgs
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	if a.Limit < 0 || a.Limit > maxSearchLimit {
		return nil, fmt.Errorf("%w: limit %d must be between %d and %d", kerneltool.ErrInvalidArgs, a.Limit, minSearchLimit, maxSearchLimit)
	}
	if strings.TrimSpace(a.Query) == "" {
		return nil, fmt.Errorf("%w: the query is empty; say what the tool should do", kerneltool.ErrInvalidArgs)
	}
	if a.Detail != "" && a.Detail != "full" && a.Detail != "brief" {
		return nil, fmt.Errorf("%w: detail %q: use \"full\" (the default) or \"brief\"", kerneltool.ErrInvalidArgs, clip.Text(string(a.Detail)))
	}
	// The results are the tools the process may read, and the MCP tools
	// it may call; a process that may do neither is refused (and the
	// refusal logged).
	canRead := hasRight(p, capability.Read)
	if !canRead && !(n.opts.MCP != nil && hasRight(p, capability.MCP)) {
		return nil, p.Check(capability.Read, n.toolsDir()+"/")
	}
	p.CountCall()
	limit := int(a.Limit)
	if limit == 0 {
		limit = defaultSearchLimit
	}
	hits := []SearchHit{}
	if canRead {
		found, err := n.regClient.Search(ctx, a.Query, 4*limit)
		if err != nil {
			return nil, err
		}
		// A tool waiting for its approval is not offered (approval gate);
		// the approvals file is read once for the whole search.
		needs := n.needsApproval()
		for _, h := range found {
			if r, err := n.opts.Jail.Resolve(h.Path); err == nil && p.Covers(capability.Read, r) && len(hits) < limit && !needs(r) {
				hits = append(hits, h)
			}
		}
	}
	// The MCP servers' tools, ranked by the same BM25F scoring (scores
	// are normalised 0..1 in both), merge by score: ties keep the
	// registered tool first.
	if mcpHits := n.searchMCP(ctx, p, a.Query, limit); len(mcpHits) > 0 {
		hits = append(hits, mcpHits...)
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
		hits = hits[:min(limit, len(hits))]
	}
	if a.Detail == "brief" {
		return briefHits(hits), nil
	}
	return hits, nil
}

// BriefHit is a search_tools result with detail "brief": what an agent
// needs to choose a tool, progressive disclosure's first step; read_file
// of Path gives its types and documentation.
type BriefHit struct {
	Path    string  `json:"path"`
	Name    string  `json:"name"`
	Summary string  `json:"summary"`
	Score   float64 `json:"score"`
}

// briefSummaryRunes bounds a brief hit's summary.
const briefSummaryRunes = 120

// briefHits is hits with detail "brief": each description cut to its
// first line, at most briefSummaryRunes runes.
func briefHits(hits []SearchHit) []BriefHit {
	out := make([]BriefHit, len(hits))
	for i, h := range hits {
		sum, _, _ := strings.Cut(strings.TrimSpace(h.Description), "\n")
		if r := []rune(sum); len(r) > briefSummaryRunes {
			sum = string(r[:briefSummaryRunes-1]) + "…"
		}
		out[i] = BriefHit{Path: h.Path, Name: h.Name, Summary: sum, Score: h.Score}
	}
	return out
}

// ExecResult is exec_tool's result: the run's result and its journal id.
type ExecResult struct {
	execclient.Result
	// RunID is the journal run ("" when the node records nothing).
	RunID string `json:"run_id,omitempty"`
}

func (n *Node) execTool(ctx context.Context, p *kernel.Process, args json.RawMessage) (any, error) {
	var a execToolArgs
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	// A tool another node just wrote is run as written, never stale.
	if err := n.syncTools(ctx); err != nil {
		return nil, err
	}
	// exec on where the path leads suffices to load the entry module; the
	// run itself then holds exactly p's rights: the executor actor checks
	// p's token (callerOf) on every file access and driver call.
	// tools/x.ts@<hash> runs a recorded version (from the journal): the
	// exec right is checked on the tool's path, as for its current file.
	asked, version, versioned := executor.SplitVersion(a.Path)
	path, src, err := n.readEntry(p, asked, versioned)
	if err != nil {
		return nil, err
	}
	runPath := path
	if versioned {
		runPath = path + "@" + version
	}
	lim, memMB, err := n.execLimits(p)
	if err != nil {
		return nil, err
	}
	defer p.Account().Refund(capability.MemoryMB, memMB)
	caller, err := callerOf(p)
	if err != nil {
		return nil, err
	}
	key := execclient.NewRunKey()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The process ends: its run is cancelled first, and the executor actor
	// confirms it (Cancel{run_key} answered) before the kernel revokes the
	// process's token, so that the run ends "cancelled" and resumable, never
	// failed by the refusals the revocation causes.
	release, alive := p.HoldRun(func() {
		cancel()
		_, _ = n.execClient.Cancel(key)
	})
	if !alive {
		return nil, fmt.Errorf("exec_tool: process %v has ended; its runs cannot start", p.PID())
	}
	defer release()
	cl, refused, err := n.execGate(ctx, runCtx, p, path, version, src)
	if refused != nil || err != nil {
		return refused, err
	}
	if cl.hash != "" && !p.WallDeadline().IsZero() {
		lim.Timeout = max(min(lim.Timeout, time.Until(p.WallDeadline())), time.Millisecond) // the wait spent wall time
	}
	wait := lim.Timeout + n.run.KillGrace + time.Minute
	req := execclient.RunRequest{Key: key, Path: runPath, Args: a.Args, Limits: lim, Record: true, Caller: caller, Wait: wait, Hash: cl.hash, GateModules: cl.gated, Judged: cl.modules, Source: src}
	res, runID, err := n.execRun(ctx, runCtx, a.Placement, req, versioned)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err // the caller gave up; its run was cancelled
	}
	if res.Success {
		// The usage count in meta.json, through the registry actor: Used
		// waits for the count to be taken, so a stop cannot drop it. A
		// registry that does not answer costs the count, never the run.
		if err := n.regClient.Used(ctx, path); err != nil {
			n.opts.Logger.Warn("exec_tool: the tool's use was not counted", "path", path, "err", err)
		}
	}
	return ExecResult{Result: res, RunID: runID}, nil
}

// execLimits are the limits of p's run: the node's, its memory held
// against p's memory_mb quota while it runs (charged here: the caller
// MUST refund memMB), its timeout never over the wall time left.
func (n *Node) execLimits(p *kernel.Process) (lim executor.Limits, memMB float64, err error) {
	lim = n.run.Limits
	if left, ok := p.Account().Left(capability.MemoryMB); ok && left < float64(lim.MemoryBytes>>20) {
		lim.MemoryBytes = int64(left * (1 << 20))
	}
	memMB = max(float64(lim.MemoryBytes>>20), 1)
	if err := p.Charge(capability.MemoryMB, memMB); err != nil {
		return lim, 0, err
	}
	if !p.WallDeadline().IsZero() {
		lim.Timeout = max(min(lim.Timeout, time.Until(p.WallDeadline())), time.Millisecond)
	}
	return lim, memMB, nil
}

// execGate passes the run through the approval gate: a tool whose risk
// needs an approval waits for it (bounded; ending p, through its HoldRun,
// cancels the wait), and then runs exactly the version approved. A refusal
// the caller sees as the run's result is returned as refused.
// IMPORTANT: the run executes exactly the entry the gate judged: its hash
// travels as RunRequest.Hash and the executor refuses other content.
func (n *Node) execGate(ctx, runCtx context.Context, p *kernel.Process, path, version string, src []byte) (cleared, any, error) {
	cl, err := n.gateRun(runCtx, p, path, version, src)
	if isMissing(err) && version == "" && n.pullMissing(ctx) {
		// Another node wrote it and this one missed the announcement.
		cl, err = n.gateRun(runCtx, p, path, version, nil)
	}
	if afterGate != nil {
		afterGate(path)
	}
	if err == nil {
		return cl, nil, nil
	}
	if res, ok := gateFailure(err); ok {
		return cl, res, nil
	}
	if isMissing(err) {
		return cl, ExecResult{Result: execclient.Result{Result: json.RawMessage("null"), Logs: []string{}, Error: &executor.Error{Kind: executor.ErrNotFound.Kind, Code: driver.CodeNotFound, Message: err.Error()}}}, nil
	}
	return cl, nil, err
}

// execRun runs req where placement says (a recorded version runs here,
// where its journal is read), pulling a tool this node missed and running
// it again when the run did not find it.
func (n *Node) execRun(ctx, runCtx context.Context, placement string, req execclient.RunRequest, versioned bool) (execclient.Result, string, error) {
	target, err := n.placement(placement)
	if err != nil {
		return execclient.Result{}, "", err
	}
	if target != nil && !versioned {
		// Another node runs its own file, held to the judged hash.
		req.Source = nil
		return n.runOn(runCtx, target, req)
	}
	if req.Source != nil && req.Hash == "" {
		req.Hash = transpile.Hash(req.Source) // the gate is off: the run is held to the bytes read
	}
	done := n.busy()
	res, runID, err := n.execClient.Run(runCtx, req)
	done()
	if err == nil && res.Error != nil && res.Error.Kind == executor.ErrNotFound.Kind && !versioned && n.pullMissing(ctx) {
		// Another node wrote it and this one missed the announcement
		// (the first run has ended: its key is free again).
		done := n.busy()
		res, runID, err = n.execClient.Run(runCtx, req)
		done()
	}
	return res, runID, err
}

// toolsDir is the tools directory of the node's executor.
func (n *Node) toolsDir() string {
	if d := n.run.ToolsDir; d != "" {
		return d
	}
	return "tools"
}
