package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentos-run/agentos/actors/forge/check"
	"github.com/agentos-run/agentos/actors/kernel"
	"github.com/agentos-run/agentos/capability"
	"github.com/agentos-run/agentos/console"
	"github.com/agentos-run/agentos/governance/gate"
	"github.com/agentos-run/agentos/internal/toolmeta"
	"github.com/agentos-run/agentos/journal"
	"github.com/agentos-run/agentos/transpile"
	"github.com/agentos-run/agentos/vfs"
)

// The host's side of the console's Tools, Approvals, Processes and
// Cluster pages (console.ToolsBackend, ApprovalsBackend, ProcsBackend) are
// methods of consoleBackend (console.go). Every read and action goes
// through the principal's kernel process (consoleBackend.proc), whose
// token is delegated from the session's: its rights are checked exactly as
// the kernel tools check them.

// maxPage bounds a page of any list.
const maxPage = 500

// pageLimit is limit within 1..maxPage (def when <= 0).
func pageLimit(limit, def int) int {
	if limit <= 0 {
		return def
	}
	return min(limit, maxPage)
}

// check is check_tool's verdict on src.
func (b *consoleBackend) check(path string, src []byte) check.Result {
	return check.New(b.rt.cfg.CheckOptions()).Check(path, src)
}

// readable reports whether p may read the tool at path (as read_file
// checks it: on the path its links lead to).
func (b *consoleBackend) readable(p *kernel.Process, path string) bool {
	r, err := b.rt.jail.Resolve(path)
	return err == nil && p.Covers(capability.Read, r)
}

// mayRead refuses a tool p may not read, as read_file refuses it
// (counted as a refusal by the kernel).
func (b *consoleBackend) mayRead(p *kernel.Process, path string) error {
	r, err := b.rt.jail.Resolve(path)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", console.ErrBadInput, path, err)
	}
	if err := p.Check(capability.Read, r); err != nil {
		return fmt.Errorf("%w: %w", console.ErrDenied, err)
	}
	return nil
}

// SearchTools implements console.ToolsBackend: the registry's ranking,
// the tools the principal may read.
func (b *consoleBackend) SearchTools(_ context.Context, who console.Principal, query string, limit int) ([]console.ToolHit, error) {
	p, err := b.proc(who)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("%w: the query is empty; say what the tool should do", console.ErrBadInput)
	}
	limit = pageLimit(limit, 20)
	states := b.approvalStates()
	out := []console.ToolHit{}
	for _, h := range b.rt.reg.Search(query, 4*limit) {
		if len(out) == limit {
			break
		}
		if b.readable(p, h.Path) {
			out = append(out, console.ToolHit{ToolInfo: toolInfo(h.Tool, states), Score: h.Score})
		}
	}
	return out, nil
}

// Tools implements console.ToolsBackend.
func (b *consoleBackend) Tools(_ context.Context, who console.Principal, after string, limit int) (console.ToolPage, error) {
	p, err := b.proc(who)
	if err != nil {
		return console.ToolPage{}, err
	}
	limit = pageLimit(limit, 50)
	states := b.approvalStates()
	var page console.ToolPage
	for _, t := range b.rt.reg.List() { // by path
		if !b.readable(p, t.Path) {
			continue
		}
		page.Total++
		switch {
		case t.Path <= after && after != "":
		case len(page.Tools) < limit:
			page.Tools = append(page.Tools, toolInfo(t, states))
		case page.Next == "":
			page.Next = page.Tools[len(page.Tools)-1].Path
		}
	}
	return page, nil
}

// Tool implements console.ToolsBackend.
func (b *consoleBackend) Tool(_ context.Context, who console.Principal, path string) (console.ToolDetail, error) {
	p, err := b.proc(who)
	if err != nil {
		return console.ToolDetail{}, err
	}
	t, ok := b.rt.reg.Get(path)
	if !ok {
		return console.ToolDetail{}, fmt.Errorf("%w: no tool is registered at %s (paths are relative to the tool root, e.g. tools/x.ts)", console.ErrNotFound, path)
	}
	if err := b.mayRead(p, t.Path); err != nil {
		return console.ToolDetail{}, err
	}
	states := b.approvalStates()
	d := console.ToolDetail{ToolInfo: toolInfo(t, states)}
	src, err := b.current(t.Path)
	if err == nil {
		d.Source = string(src)
		d.Check = b.check(t.Path, src)
	}
	vs, err := b.versions(t.Path)
	if err != nil {
		return console.ToolDetail{}, err
	}
	d.Versions = b.withCurrent(t.Path, vs, t.Hash, states)
	if rep, at, ok := lastGateReport(b.rt.state, t.Path); ok {
		d.Gate, d.GateAt = &rep, at
	}
	return d, nil
}

// ToolVersion implements console.ToolsBackend.
func (b *consoleBackend) ToolVersion(_ context.Context, who console.Principal, path, hash, base, before string, limit int) (console.ToolVersionDetail, error) {
	p, err := b.proc(who)
	if err != nil {
		return console.ToolVersionDetail{}, err
	}
	if err := b.mayRead(p, path); err != nil {
		return console.ToolVersionDetail{}, err
	}
	t, _ := b.rt.reg.Get(path)
	vs, err := b.versions(path)
	if err != nil {
		return console.ToolVersionDetail{}, err
	}
	all := b.withCurrent(path, vs, t.Hash, b.approvalStates())
	i, err := findVersion(path, all, hash)
	if err != nil {
		return console.ToolVersionDetail{}, err
	}
	d := console.ToolVersionDetail{Path: path, Version: all[i]}
	src, note := b.versionSource(path, all[i].Hash)
	d.Source, d.SourceNote = string(src), note
	if src != nil && !all[i].Current { // the current one's is ToolDetail.Check
		d.Check = b.check(path, src)
		d.Version.Risk = string(d.Check.Risk)
	}
	if base == "" && i+1 < len(all) {
		base = all[i+1].Hash // the version before it
	}
	if base != "" {
		j, err := findVersion(path, all, base)
		if err != nil {
			return console.ToolVersionDetail{}, err
		}
		d.Base = all[j].Hash
		if old, _ := b.versionSource(path, all[j].Hash); old != nil && src != nil {
			d.Diff = console.Diff(string(old), string(src), 3)
		}
	}
	d.Runs, d.Next, err = b.versionRuns(path, all[i].Hash, before, pageLimit(limit, 50))
	return d, err
}

// findVersion returns the index in all of the version whose hash is
// hash or starts with it (at least journal.MinVersionPrefix digits).
func findVersion(path string, all []console.ToolVersion, hash string) (int, error) {
	hash = strings.ToLower(hash)
	if len(hash) < journal.MinVersionPrefix {
		return 0, fmt.Errorf("%w: version %q of %s: give the version's content hash or at least %d hex digits of it", console.ErrBadInput, hash, path, journal.MinVersionPrefix)
	}
	found := -1
	for i, v := range all {
		if strings.HasPrefix(v.Hash, hash) {
			if found >= 0 {
				return 0, fmt.Errorf("%w: version %q of %s names more than one version: give more of the hash", console.ErrBadInput, hash, path)
			}
			found = i
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("%w: the journal keeps no version %s of %s, and it is not the current one", console.ErrNotFound, hash, path)
	}
	return found, nil
}

// current reads the tool's current source from the tool tree.
func (b *consoleBackend) current(path string) ([]byte, error) {
	r, err := b.rt.jail.Resolve(path)
	if err != nil {
		return nil, err
	}
	return b.rt.jail.ReadFile(r)
}

// versionSource is the source of path at hash: from the journal's
// sources, else the tool tree's file when it is that version.
func (b *consoleBackend) versionSource(path, hash string) ([]byte, string) {
	if b.rt.j != nil {
		if src, err := b.rt.j.Source(hash); err == nil {
			return src, ""
		}
	}
	if src, err := b.current(path); err == nil && transpile.Hash(src) == hash {
		return src, ""
	}
	return nil, "the journal no longer keeps this version's source (its runs were pruned) and the tool tree holds another version"
}

// versions are the versions of path the journal keeps, newest first,
// from its tool index (journal.ToolVersions): every version, whatever the
// journal's size.
func (b *consoleBackend) versions(path string) ([]journal.Version, error) {
	if b.rt.j == nil {
		return nil, nil
	}
	return b.rt.j.ToolVersions(path)
}

// withCurrent converts vs, adding the current version (hash) first when
// no run recorded it yet, and marks it current.
func (b *consoleBackend) withCurrent(path string, vs []journal.Version, hash string, states map[string]string) []console.ToolVersion {
	out := make([]console.ToolVersion, 0, len(vs)+1)
	if hash != "" && !slices.ContainsFunc(vs, func(v journal.Version) bool { return v.Hash == hash }) {
		out = append(out, console.ToolVersion{Hash: hash})
	}
	for _, v := range vs {
		out = append(out, console.ToolVersion{Hash: v.Hash, Runs: v.Runs, Required: v.Required, First: v.First, Last: v.Last, LastRun: v.LastRun, Commit: v.Commit})
	}
	for i := range out {
		out[i].Current = out[i].Hash == hash
		out[i].Approval = states[path+"\x00"+out[i].Hash]
	}
	return out
}

// versionRuns are the runs of path at hash, newest first, those before
// the run before, at most limit, from the journal's tool index; next is
// the cursor of the next page ("" on the last).
func (b *consoleBackend) versionRuns(path, hash, before string, limit int) (rows []console.ToolRun, next string, err error) {
	if b.rt.j == nil {
		return nil, "", nil
	}
	err = b.rt.j.EachRunOf(journal.ToolQuery{Tool: path, Version: hash, Before: before, Limit: limit + 1}, func(r journal.RunMeta) error {
		rows = append(rows, toolRun(r))
		return nil
	})
	if len(rows) > limit {
		rows, next = rows[:limit], rows[limit-1].ID
	}
	if errors.Is(err, journal.ErrNoRun) || errors.Is(err, journal.ErrAmbiguous) {
		err = fmt.Errorf("%w: %w", console.ErrBadInput, err)
	}
	return rows, next, err
}

func toolRun(r journal.RunMeta) console.ToolRun {
	tr := console.ToolRun{ID: r.ID, Kind: r.Kind, Status: r.Status, Started: r.Started, Calls: r.Calls}
	if !r.Ended.IsZero() {
		tr.Duration = r.Ended.Sub(r.Started)
	}
	var e struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	if len(r.Error) > 0 && json.Unmarshal(r.Error, &e) == nil && (e.Kind != "" || e.Message != "") {
		tr.Error = strings.TrimPrefix(e.Kind+": "+e.Message, ": ")
	}
	return tr
}

// approvalStates maps path NUL hash to the approval gate's state of that
// version, for both the request's approval key and its entry's hash.
func (b *consoleBackend) approvalStates() map[string]string {
	out := map[string]string{}
	if b.rt.gate == nil {
		return out
	}
	rs, err := b.rt.gate.List("")
	if err != nil {
		return out
	}
	for _, r := range rs { // oldest first: a later decision wins
		out[r.Path+"\x00"+r.Hash] = string(r.State)
		if r.Source != "" {
			out[r.Path+"\x00"+r.Source] = string(r.State)
		}
	}
	return out
}

// toolInfo converts a registry entry.
func toolInfo(t toolmeta.Tool, states map[string]string) console.ToolInfo {
	ti := console.ToolInfo{Path: t.Path, Name: t.Name, Description: t.Description, Tags: t.Tags, Hash: t.Hash, Version: t.Version, Usage: t.Usage, Created: t.Created, Updated: t.Updated,
		Approval: states[t.Path+"\x00"+t.Hash]}
	if len(t.Parameters) > 0 {
		var b bytes.Buffer
		if json.Indent(&b, t.Parameters, "", "  ") == nil {
			ti.Parameters = b.String()
		}
	}
	return ti
}

// sortedMeters renders a meter map as sorted "meter=value" strings.
func sortedMeters(m map[capability.Meter]float64) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%g", k, v))
	}
	sort.Strings(out)
	return out
}

// GateReportsDir is where the node keeps the registration gate's last
// report on each tool, in its state directory (one JSON file per tool,
// named by the SHA-256 of its path): what the console's tool page shows.
const GateReportsDir = "gate"

// keptReport is a gate report as kept on disk.
type keptReport struct {
	At     time.Time   `json:"at"`
	Report gate.Report `json:"report"`
}

// gateReportFile is the file of path's last report in the state jail.
func gateReportFile(path string) string {
	return GateReportsDir + "/" + transpile.Hash([]byte(path))[:32] + ".json"
}

// keepGateReport keeps rep as the last report on its tool, replacing the
// one before (best effort: a report that cannot be kept is logged).
func (rt *Runtime) keepGateReport(rep gate.Report) {
	if rt.state == nil || rep.Path == "" {
		return
	}
	b, err := json.Marshal(keptReport{At: time.Now().UTC(), Report: rep})
	if err == nil {
		err = rt.state.WriteFile(gateReportFile(rep.Path), b)
	}
	if err != nil {
		rt.log.Warn("agentos: the registration gate's report could not be kept for the console", "path", rep.Path, "err", err)
	}
}

// lastGateReport returns the last report kept on the tool at path.
func lastGateReport(state *vfs.Jail, path string) (gate.Report, time.Time, bool) {
	if state == nil {
		return gate.Report{}, time.Time{}, false
	}
	b, err := state.ReadFile(gateReportFile(path))
	if err != nil {
		return gate.Report{}, time.Time{}, false
	}
	var k keptReport
	if json.Unmarshal(b, &k) != nil || k.Report.Path != path {
		return gate.Report{}, time.Time{}, false
	}
	return k.Report, k.At, true
}

// reportingGater is the registration gate handing each report to keep
// as well as to the git actor.
type reportingGater struct {
	g    *gate.Gate
	keep func(gate.Report)
}

// Check implements git.Gater.
func (r reportingGater) Check(ctx context.Context, path string, old, new []byte) gate.Report {
	rep := r.g.Check(ctx, path, old, new)
	r.keep(rep)
	return rep
}
