package console

import (
	"context"
	"encoding/json"
	"time"
)

// RunsBackend is what the Runs and Debug pages read and do.
type RunsBackend interface {
	// ListRuns is one page of the runs who may read (a run of a tool its
	// token may read), newest first, filtered by q. It MUST read a bounded
	// number of runs whatever the journal's size (RunPage.Scanned says how
	// many; a filter that matched too few within the bound says so with
	// RunPage.Partial and a cursor to go on).
	ListRuns(ctx context.Context, who Principal, q RunQuery) (RunPage, error)
	// Run is one run with its journaled calls. ErrNotFound for a run who
	// may not read, as for no run (its id is not disclosed).
	Run(ctx context.Context, who Principal, id string) (RunDetail, error)
	// Replay replays run id offline (nothing is executed against the
	// world: every I/O is served from the journal) with the source req
	// names, as who: who MUST hold exec on the run's tool.
	Replay(ctx context.Context, who Principal, req ReplayRequest) (ReplayResult, error)
	// SaveSource writes src as the tool at path's new version through the
	// write_file kernel tool with who's token (the rights and the
	// registration gate apply).
	SaveSource(ctx context.Context, who Principal, path string, src []byte) (SaveResult, error)
}

// RunQuery selects a page of runs. Before and After are the cursors a
// RunPage names (one at most); the filters are exact matches ("" matches
// every run), Tool also matching a prefix ending in "/".
type RunQuery struct {
	Before, After string
	Limit         int
	Kind          string
	Tool          string
	Status        string
	Node          string
	// Since and Until bound the runs' start (zero: unbounded).
	Since, Until time.Time
}

// RunPage is one page of runs, newest first.
type RunPage struct {
	Runs []RunSummary
	// Before names the next older page's cursor, After the next newer
	// one's ("" when there is none).
	Before, After string
	// Scanned is how many runs were read to fill the page; Partial says the
	// scan stopped at its bound before the page was full (follow Before).
	Scanned int
	Partial bool
}

// RunSummary is a run's row in the list.
type RunSummary struct {
	ID, Kind, Tool, Hash, Status string
	Started, Ended               time.Time
	Calls                        int
	// Node is the host that ran it ("pid@boot"), Caller the process.
	Node, Caller string
	ReplayOf     string
}

// Duration is how long the run took (0 while it runs).
func (r RunSummary) Duration() time.Duration {
	if r.Ended.IsZero() {
		return 0
	}
	return r.Ended.Sub(r.Started)
}

// RunDetail is a run's page.
type RunDetail struct {
	RunSummary
	Args, Result, Error json.RawMessage
	Reason              string
	// Logs are the lines the run logged, as its journal keeps them;
	// LogsCut counts the lines the journal's bound (LogsLimit bytes) left
	// out or shortened.
	Logs      []string
	LogsCut   int
	LogsLimit int
	// TraceID is the OpenTelemetry trace id of the run's spans, "" when
	// the run was recorded with tracing off.
	TraceID string
	Calls   []Call
	// Modules are the versions of every module the run ran: the entry
	// first (the tool at Hash), then its requires.
	Modules []Module
	Commit  string
	// TraceCommand shows the run call by call from a shell.
	TraceCommand string
	// Source is the recorded source of the tool's version, when the
	// journal keeps it (the replay editor starts from it).
	Source string
	// Replayable says the run can be replayed from the page (a tool run).
	Replayable bool
}

// Call is one journaled driver call.
type Call struct {
	Seq               uint64
	Driver, Op        string
	Request, Response json.RawMessage
	Error             string
	At                time.Time
	Duration          time.Duration
	Sealed            string
}

// Module is one version of a module a run ran.
type Module struct {
	Path, Hash string
}

// ReplaySource says which source a replay runs.
type ReplaySource string

const (
	// ReplayRecorded runs the recorded version (does it still replay?).
	ReplayRecorded ReplaySource = "recorded"
	// ReplayCurrent runs the tool tree's current version of the tool.
	ReplayCurrent ReplaySource = "current"
	// ReplayEdited runs ReplayRequest.Source.
	ReplayEdited ReplaySource = "edited"
)

// ReplayRequest asks for a replay of Run.
type ReplayRequest struct {
	Run    string
	Mode   ReplaySource
	Source []byte // ReplayEdited only
}

// ReplayResult is what a replay found.
type ReplayResult struct {
	Run     RunSummary
	Mode    ReplaySource
	Patched bool
	// Same says the replay gave the recorded result.
	Same bool
	// Recorded and Replayed are the old and new results (or errors).
	Recorded, Replayed string
	ReplayedOK         bool
	// Divergence is the first call that differs, nil when none did.
	Divergence *Divergence
	LimitHit   string
	Notes      []string
	Logs       []string
}

// Divergence is the first point a replay asked for other I/O than
// recorded.
type Divergence struct {
	Code, Message    string
	Seq              uint64
	Expected, Actual string
}

// SaveResult is what saving a fix did.
type SaveResult struct {
	Path, Hash, Message string
}
