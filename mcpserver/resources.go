package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentos-run/agentos/actors/kernel/proc"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/internal/toolmeta"
	"github.com/agentos-run/agentos/journal"
)

// The resources a Server offers (docs/MCP.md, "Resources"):
//
//	agentos://registry              the registered tools the client may read (JSON)
//	agentos://tools/{+path}         a tool's current source (listed, one per readable tool)
//	agentos://tools/{+path}@{hash}  a recorded version of it, from the journal
//	agentos://runs/{id}             a run the client's process made: its record and calls (JSON)
//	agentos://personas/{name}       a persona's current text (name@version: a version)
//
// IMPORTANT: every read is a kernel call of the client's process: it waits
// while the process is stopped, is charged one tool_calls before it is
// examined (a refused read too), and checks the read right on the tool's
// path (on where it resolves, for the current file: the read_file kernel
// tool serves it) exactly as read_file does. A resource is listed only
// when the process may read it.
const (
	URIRegistry        = "agentos://registry"
	uriTools           = "agentos://tools/"
	uriRuns            = "agentos://runs/"
	uriPersonas        = "agentos://personas/"
	templateToolSource = "agentos://tools/{+path}"
	templateToolAt     = "agentos://tools/{+path}@{hash}"
	templateRun        = "agentos://runs/{id}"
	templatePersona    = "agentos://personas/{name}"
)

// ToolURI is the resource URI of the registered tool at p (a path in the
// tool root) when toolsDir is the tools directory: agentos://tools/ and p
// under toolsDir (tools/math/fib.ts: agentos://tools/math/fib.ts).
func ToolURI(p, toolsDir string) string {
	return uriTools + strings.TrimPrefix(p, strings.TrimSuffix(toolsDir, "/")+"/")
}

// resourceTemplates are the templates every process's server offers.
func (s *Server) addResourceTemplates(srv *mcp.Server, p proc.Process) {
	src := s.toolSourceHandler(p)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "tool-source", Title: "A tool's current source", URITemplate: templateToolSource, MIMEType: "text/typescript",
		Description: "The current source of the tool at tools/{path} (the read right on it, as read_file)."}, src)
	if s.opts.Journal != nil {
		srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "tool-version", Title: "A recorded version of a tool", URITemplate: templateToolAt, MIMEType: "text/typescript",
			Description: "The source of one version of a tool, by its content hash (8+ hex digits), as the journal recorded it when a run used it."}, src)
		srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "run", Title: "A run's trace", URITemplate: templateRun, MIMEType: "application/json",
			Description: "A run this client's process made: its record (tool, version, arguments, status, result) and every driver call, as 'agentos trace' shows it."}, s.runHandler(p))
	}
	if s.opts.Personas != nil {
		srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "persona", Title: "A persona's system prompt", URITemplate: templatePersona, MIMEType: "text/markdown",
			Description: "A persona's current text (name), or one version (name@version)."}, s.personaHandler(p))
	}
	srv.AddResource(&mcp.Resource{URI: URIRegistry, Name: "registry", Title: "The tool registry", MIMEType: "application/json",
		Description: "Every registered tool this client may read: path, resource URI, MCP tool name, description, parameters, tags, hash, version, usage."}, s.registryHandler(p))
}

// syncResourcesLocked lists, as resources of b, the current source of
// every registered tool b's process may read (s.mu held); a change sends
// notifications/resources/list_changed.
func (s *Server) syncResourcesLocked(b *bound) {
	want := map[string]toolmeta.Tool{}
	for _, t := range s.tools {
		if b.p.Covers(capability.Read, t.Path) {
			want[ToolURI(t.Path, s.opts.ToolsDir)] = t
		}
	}
	var gone []string
	for uri := range b.sources {
		if _, ok := want[uri]; !ok {
			gone = append(gone, uri)
			delete(b.sources, uri)
		}
	}
	if len(gone) > 0 {
		b.srv.RemoveResources(gone...)
	}
	h := s.toolSourceHandler(b.p)
	for uri, t := range want {
		if b.sources[uri] == t.Hash {
			continue
		}
		b.srv.AddResource(&mcp.Resource{URI: uri, Name: t.Path, MIMEType: "text/typescript", Description: t.Description,
			Meta: mcp.Meta{MetaPath: t.Path, "agentos/hash": t.Hash, "agentos/version": t.Version}}, h)
		b.sources[uri] = t.Hash
	}
}

// kernelRead performs the bookkeeping of a kernel call for p: it waits
// while p is stopped and charges one tool_calls, before anything is
// examined (kerneltools.Node.Call does the same for the kernel tools).
func kernelRead(ctx context.Context, p proc.Process) error {
	if err := p.Gate(ctx); err != nil {
		return err
	}
	return p.Charge(capability.ToolCalls, 1)
}

// permitRead checks the read right of p on resource (charged already) and
// counts the call (ps).
func permitRead(p proc.Process, resource string) error {
	if err := p.Check(capability.Read, resource); err != nil {
		return err
	}
	p.CountCall()
	return nil
}

// readError is the protocol error of a read that failed: its message says
// why (a refusal names the right and the resource).
func readError(uri string, err error) error {
	if errors.Is(err, capability.ErrDenied) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: %v", uri, err)}
	}
	return &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: fmt.Sprintf("%s: %v", uri, err), Data: json.RawMessage(fmt.Sprintf(`{"uri":%q}`, uri))}
}

// splitVersion splits "math/fib.ts@1a2b3c4d" into the path and the
// version (8+ hex digits); without one, version is "".
func splitVersion(rest string) (p, version string) {
	i := strings.LastIndexByte(rest, '@')
	if i < 0 {
		return rest, ""
	}
	v := rest[i+1:]
	if len(v) >= journal.MinVersionPrefix && strings.Trim(strings.ToLower(v), "0123456789abcdef") == "" {
		return rest[:i], strings.ToLower(v)
	}
	return rest, ""
}

// under reports whether the clean path file lies inside dir (a path
// relative to the tool root; "." is the root itself).
func under(file, dir string) bool {
	dir = path.Clean(dir)
	if dir == "." {
		return file != ".." && !strings.HasPrefix(file, "../")
	}
	return strings.HasPrefix(file, dir+"/")
}

// toolSourceHandler reads agentos://tools/{path}[@{hash}] as p.
func (s *Server) toolSourceHandler(p proc.Process) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		rel, version := splitVersion(strings.TrimPrefix(uri, uriTools))
		file := path.Join(s.opts.ToolsDir, rel)
		if rel == "" || !under(file, s.opts.ToolsDir) {
			return nil, readError(uri, fmt.Errorf("not a tool: the URI is agentos://tools/<path under %s/>[@<hash>]", s.opts.ToolsDir))
		}
		var src []byte
		if version == "" {
			// The read_file kernel tool: charged, checked where the path
			// resolves, pulled in a cluster: exactly what a model's read is.
			out, err := s.opts.Node.Call(ctx, p, "read_file", mustArgs(map[string]string{"path": file}))
			if err != nil {
				return nil, readError(uri, err)
			}
			var text string
			if err := json.Unmarshal(out, &text); err != nil {
				return nil, readError(uri, err)
			}
			src = []byte(text)
		} else {
			if err := kernelRead(ctx, p); err != nil {
				return nil, readError(uri, err)
			}
			if err := permitRead(p, file); err != nil {
				return nil, readError(uri, err)
			}
			_, b, err := s.opts.Journal.ResolveVersion(file, version)
			if err != nil {
				return nil, readError(uri, err)
			}
			src = b
		}
		return s.contents(uri, "text/typescript", string(src))
	}
}

// contents is the answer of a read of uri: text, PII-tokenized as every
// result a client receives is (Options.PII); a text that cannot be
// tokenized is not sent.
func (s *Server) contents(uri, mime, text string) (*mcp.ReadResourceResult, error) {
	if s.opts.PII != nil {
		var err error
		if text, err = s.opts.PII.Text(text); err != nil {
			return nil, readError(uri, err)
		}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: text}}}, nil
}

// mustArgs marshals a kernel tool's arguments (a map of strings cannot
// fail to marshal).
func mustArgs(v map[string]string) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// registryEntry is one tool of agentos://registry.
type registryEntry struct {
	toolmeta.Tool
	URI     string `json:"uri"`
	MCPName string `json:"tool"` // its MCP tool name
}

// registryHandler reads agentos://registry as p: the registered tools p
// may read.
func (s *Server) registryHandler(p proc.Process) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if err := kernelRead(ctx, p); err != nil {
			return nil, readError(req.Params.URI, err)
		}
		p.CountCall()
		s.mu.Lock()
		out := []registryEntry{}
		for name, t := range s.tools {
			if p.Covers(capability.Read, t.Path) {
				out = append(out, registryEntry{Tool: t, URI: ToolURI(t.Path, s.opts.ToolsDir), MCPName: name})
			}
		}
		s.mu.Unlock()
		sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return nil, err
		}
		return s.contents(req.Params.URI, "application/json", string(b))
	}
}

// runTrace is agentos://runs/{id}: the run's record and its calls.
type runTrace struct {
	Run   journal.RunMeta `json:"run"`
	Calls []journal.Entry `json:"calls"`
}

// ownsRun reports whether the run meta was made for p: its caller is p's
// (named) process and p may still read the run's tool. IMPORTANT: a run
// records its caller by process name, which a token's MCP process keeps
// across restarts (mcp-<token id>); an unnamed process owns no run.
func ownsRun(p proc.Process, meta journal.RunMeta) bool {
	return meta.Caller != nil && p.Name() != "" && meta.Caller.Process == p.Name() && meta.Tool != "" && p.Covers(capability.Read, meta.Tool)
}

// runHandler reads agentos://runs/{id} as p: only a run p's process made.
func (s *Server) runHandler(p proc.Process) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		id := strings.TrimPrefix(uri, uriRuns)
		if err := kernelRead(ctx, p); err != nil {
			return nil, readError(uri, err)
		}
		meta, err := s.opts.Journal.Get(id)
		if err != nil || !ownsRun(p, meta) {
			// One answer for "no such run" and "not yours": the ids of
			// other clients' runs are not disclosed.
			return nil, readError(uri, fmt.Errorf("%w: no run %q of this client's process %q (a client reads the runs its own token's process made; the operator reads any with 'agentos trace')", capability.ErrDenied, id, p.Name()))
		}
		p.CountCall()
		calls, err := s.opts.Journal.Entries(id)
		if err != nil {
			return nil, readError(uri, err)
		}
		b, err := json.MarshalIndent(runTrace{Run: meta, Calls: calls}, "", "  ")
		if err != nil {
			return nil, err
		}
		return s.contents(uri, "application/json", string(b))
	}
}

// maxCompletions bounds the values of one completion answer (MCP: 100).
const maxCompletions = 100

// complete answers completion/complete for p: tool paths and versions in
// the tool URIs, run ids in agentos://runs/, persona names, and a persona
// prompt's versions; each only as far as p may read.
func (s *Server) complete(p proc.Process) func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		if err := kernelRead(ctx, p); err != nil {
			return nil, err
		}
		ref, arg := req.Params.Ref, req.Params.Argument
		var ctxArgs map[string]string
		if req.Params.Context != nil {
			ctxArgs = req.Params.Context.Arguments
		}
		var values []string
		switch {
		case ref.Type == "ref/resource" && (ref.URI == templateToolSource || ref.URI == templateToolAt) && arg.Name == "path":
			values = s.toolPaths(p)
		case ref.Type == "ref/resource" && ref.URI == templateToolAt && arg.Name == "hash":
			values = s.toolVersions(p, ctxArgs["path"])
		case ref.Type == "ref/resource" && ref.URI == templateRun && arg.Name == "id":
			values = s.ownRuns(p)
		case ref.Type == "ref/resource" && ref.URI == templatePersona && arg.Name == "name":
			values = s.personaNames(p)
		case ref.Type == "ref/prompt" && arg.Name == "version":
			values = s.personaVersions(p, ref.Name)
		}
		var out []string
		for _, v := range values {
			if strings.HasPrefix(v, arg.Value) {
				out = append(out, v)
			}
		}
		res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}, Total: len(out)}}
		if len(out) > maxCompletions {
			out, res.Completion.HasMore = out[:maxCompletions], true
		}
		res.Completion.Values = append(res.Completion.Values, out...)
		return res, nil
	}
}

// toolPaths are the paths (under the tools directory) of the registered
// tools p may read, sorted.
func (s *Server) toolPaths(p proc.Process) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, t := range s.tools {
		if p.Covers(capability.Read, t.Path) {
			out = append(out, strings.TrimPrefix(ToolURI(t.Path, s.opts.ToolsDir), uriTools))
		}
	}
	slices.Sort(out)
	return out
}

// toolVersions are the hashes the journal keeps of the tool at rel (under
// the tools directory), when p may read it; the most recent first.
func (s *Server) toolVersions(p proc.Process, rel string) []string {
	file := path.Join(s.opts.ToolsDir, rel)
	if rel == "" || s.opts.Journal == nil || !p.Covers(capability.Read, file) {
		return nil
	}
	vs, err := s.opts.Journal.Versions(file)
	if err != nil {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Hash
	}
	return out
}

// ownRuns are the ids of the runs p's process made, newest first.
func (s *Server) ownRuns(p proc.Process) []string {
	if s.opts.Journal == nil {
		return nil
	}
	runs, err := s.opts.Journal.Runs()
	if err != nil {
		return nil
	}
	var out []string
	for i := len(runs) - 1; i >= 0; i-- {
		if ownsRun(p, runs[i]) {
			out = append(out, runs[i].ID)
		}
	}
	return out
}
