package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The PostgreSQL storage: a journal several nodes share, so that any node
// can resume a run another node began. Its tables (created at open):
//
//	agentos_journal_meta     key text PK, value text        "format" -> storageFormat
//	agentos_journal_runs     id text PK, started, meta bytea (RunMeta JSON),
//	                         owner text, lease_until         the claim (Journal.Claim)
//	                         fence bigint                    the claim's fencing token
//	                         calls bigint                    the run's call count once ended (page.go)
//	agentos_journal_entries  (run, seq) PK, entry bytea      a stored entry, as in bbolt
//	agentos_journal_blobs    hash text PK, data bytea        payloads by content hash
//	agentos_journal_sources  hash text PK, source bytea      tool sources by content hash
//	agentos_journal_tool_runs (path, module, hash, started, run) PK   the runs by tool (toolindex.go)
//
// Bytes are kept exactly as the bbolt journal keeps them (the same
// canonical JSON, the same blob references), so a run exports and replays
// alike from either. Every write transaction first takes ROW EXCLUSIVE
// locks on the tables in one fixed order, and Prune takes EXCLUSIVE locks
// in the same order: Prune and recording never deadlock, and a payload
// Prune deletes is never one a concurrent entry was just made to refer to.
//
// Writes are fenced by the claims: a write transaction share-locks the
// rows of the runs it writes, then each statement changes a run only if no
// other owner holds a live claim on it, and fails the batch (ErrClaimed)
// otherwise. A claim (an UPDATE of the run's row) therefore either waits
// for a write in flight, or the write sees the claim: a node that lost a
// run never writes it after another node took it.
//
// A lease alone does not fence a node that was paused past it: the node
// that took the run over may have finished it and let its claim go by the
// time the paused one writes again. So every claim also increments the
// run's fencing token (fence; a new run's is 1), a Run writes with the
// token it was given, and a write whose token is not the run's current
// one changes no row and fails the batch (ErrFenced).

// pgTables are the tables, in the order every transaction locks them.
const pgTables = "agentos_journal_sources, agentos_journal_blobs, agentos_journal_runs, agentos_journal_entries, agentos_journal_tool_runs"

const pgSchema = `
CREATE TABLE IF NOT EXISTS agentos_journal_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS agentos_journal_runs (
	id text COLLATE "C" PRIMARY KEY,
	started timestamptz NOT NULL,
	meta bytea NOT NULL,
	owner text NOT NULL DEFAULT '',
	lease_until timestamptz
);
CREATE TABLE IF NOT EXISTS agentos_journal_entries (
	run text NOT NULL,
	seq bigint NOT NULL,
	entry bytea NOT NULL,
	PRIMARY KEY (run, seq)
);
CREATE TABLE IF NOT EXISTS agentos_journal_blobs (hash text PRIMARY KEY, data bytea NOT NULL);
CREATE TABLE IF NOT EXISTS agentos_journal_sources (hash text PRIMARY KEY, source bytea NOT NULL);
ALTER TABLE agentos_journal_runs ADD COLUMN IF NOT EXISTS fence bigint NOT NULL DEFAULT 0;
ALTER TABLE agentos_journal_runs ADD COLUMN IF NOT EXISTS calls bigint;
CREATE INDEX IF NOT EXISTS agentos_journal_runs_started ON agentos_journal_runs (started, id);
CREATE TABLE IF NOT EXISTS agentos_journal_tool_runs (
	path text COLLATE "C" NOT NULL,
	hash text COLLATE "C" NOT NULL,
	module boolean NOT NULL,
	started timestamptz NOT NULL,
	run text COLLATE "C" NOT NULL,
	PRIMARY KEY (path, module, hash, started, run)
);
CREATE INDEX IF NOT EXISTS agentos_journal_tool_runs_started ON agentos_journal_tool_runs (path, module, started, run);
CREATE INDEX IF NOT EXISTS agentos_journal_tool_runs_run ON agentos_journal_tool_runs (run);
`

// pgInitLock is the advisory lock key that serializes schema creation
// between nodes opening the journal at once.
const pgInitLock = 0x6167656e746f73 // "agentos"

type pgStore struct {
	pool   *pgxpool.Pool
	name   string // the DSN without its password, for messages and Path
	nosync bool
}

// OpenPostgres opens the journal kept in the PostgreSQL database dsn
// ("postgres://user:password@host:5432/db?sslmode=..." or the key=value
// form), creating its tables if they are missing. Several processes, on
// several machines, MAY open one database at once: that is what it is for
// (bbolt's Open stays the embedded default, one process per file). The
// tables live in the DSN's search_path (a "search_path" parameter in the
// DSN chooses a schema).
//
// Everything a Journal does works alike on both (record, replay, recover,
// export and import, prune, redaction, payloads and sources by hash), plus
// run claims: Begin claims a run for this Journal (Options.Owner), which
// renews its claims while it is open, and a node resumes a run only once it
// won its claim (Claim, Recover), so that two nodes never resume one run.
//
// Durability on PostgreSQL (Options.Durability), given the server's
// synchronous_commit (default on; the journal never lowers it except for
// NoSync):
//
//	SyncEach     each entry is committed before its result is handed on: a
//	             crash of the node or of the server loses no entry a tool saw.
//	GroupCommit  entries are queued and committed in batches, the entries of
//	             concurrent runs together in one transaction: a crash of the
//	             node loses the batch not yet committed (milliseconds of
//	             calls); a run's start and end, and a Durable run's calls, are
//	             committed before returning.
//	WriteEach    SyncEach with synchronous_commit off for the journal's
//	             sessions: each entry is committed before its result is
//	             handed on, so a crash of the node loses nothing a tool saw;
//	             a crash of the server may lose its last moments' commits.
//	NoSync       GroupCommit with synchronous_commit off for the journal's
//	             sessions: a crash of the node loses the queue; a crash of
//	             the server loses the transactions of its last moments
//	             (up to three times wal_writer_delay, 600 ms by default),
//	             never consistency. A Durable run's calls are still
//	             committed with synchronous_commit on.
func OpenPostgres(dsn string, opts Options) (*Journal, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message never quotes the password.
		return nil, fmt.Errorf("opening the PostgreSQL journal: the DSN does not parse (%v); write it as postgres://user:password@host:5432/db", err)
	}
	opts.ReadOnly = false // a shared journal has no read-only open (see Options.ReadOnly)
	st := &pgStore{name: pgName(cfg.ConnConfig), nosync: !opts.Durability.fsyncs()}
	if st.nosync {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "agentos journal"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening journal %s: %w", st.name, err)
	}
	st.pool = pool
	if err := st.init(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return newJournal(st, opts), nil
}

// pgName is the database's URL without its password.
func pgName(c *pgx.ConnConfig) string {
	u := url.URL{Scheme: "postgres", Host: c.Host + ":" + strconv.Itoa(int(c.Port)), Path: "/" + c.Database}
	if strings.HasPrefix(c.Host, "/") { // a unix socket directory
		u.Host = ""
		u.RawQuery = url.Values{"host": {c.Host}}.Encode()
	}
	if c.User != "" {
		u.User = url.User(c.User)
	}
	return u.String()
}

// init creates the tables and checks (or writes) the storage format.
func (s *pgStore) init(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(pgInitLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, pgSchema); err != nil {
			return err
		}
		if err := migratePg(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO agentos_journal_meta (key, value) VALUES ('format', $1) ON CONFLICT (key) DO NOTHING", strconv.Itoa(storageFormat)); err != nil {
			return err
		}
		// An older format is raised (see storageFormat): a node of an older
		// agentos then refuses the journal rather than misread it.
		if _, err := tx.Exec(ctx, "UPDATE agentos_journal_meta SET value = $1 WHERE key = 'format' AND CASE WHEN value ~ '^[0-9]{1,9}$' THEN value::int < $2 ELSE false END", strconv.Itoa(storageFormat), storageFormat); err != nil {
			return err
		}
		var v string
		if err := tx.QueryRow(ctx, "SELECT value FROM agentos_journal_meta WHERE key = 'format'").Scan(&v); err != nil {
			return err
		}
		if n, err := strconv.Atoi(v); err != nil || n > storageFormat {
			return fmt.Errorf("%w: it has storage format %s, newer than this agentos reads (%d): upgrade agentos on every node to read it, or use another database", ErrFormat, v, storageFormat)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrFormat) {
			return fmt.Errorf("opening journal %s: %w", s.name, err)
		}
		return fmt.Errorf("opening journal %s: %w; check the DSN, that the server runs, and that its user may create tables", s.name, err)
	}
	return nil
}

// migratePg indexes the runs of a journal of format 3 or older by tool
// (format 4), in init's transaction: before it raises the format.
func migratePg(ctx context.Context, tx pgx.Tx) error {
	var v string
	err := tx.QueryRow(ctx, "SELECT value FROM agentos_journal_meta WHERE key = 'format'").Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // a new journal
	}
	if n, perr := strconv.Atoi(v); err != nil || perr != nil || n >= 4 {
		return err // a newer or unreadable format: init refuses it
	}
	if _, err := tx.Exec(ctx, "DELETE FROM agentos_journal_tool_runs"); err != nil {
		return err
	}
	var rows toolRows
	var id string
	var raw []byte
	if err := eachRow(ctx, tx, "SELECT id, meta FROM agentos_journal_runs", []any{&id, &raw}, func() error {
		x, err := decodeIndexed(raw)
		if err != nil {
			return fmt.Errorf("journal: indexing run %s by tool: its metadata does not decode (%w); delete it with 'agentos runs prune'", id, err)
		}
		rows.add(x, id)
		return nil
	}); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, insertToolRuns, rows.args()...)
	return err
}

// insertToolRuns inserts toolRows.args into the tool index.
const insertToolRuns = `INSERT INTO agentos_journal_tool_runs (path, hash, module, started, run)
	SELECT * FROM unnest($1::text[], $2::text[], $3::bool[], $4::timestamptz[], $5::text[]) ON CONFLICT DO NOTHING`

// toolRows are rows of the tool index, by column.
type toolRows struct {
	paths, hashes []string
	modules       []bool
	started       []time.Time
	runs          []string
}

// add adds the rows of run id, whose metadata is x.
func (r *toolRows) add(x indexed, id string) {
	for _, ref := range x.refs() {
		r.paths, r.hashes, r.modules = append(r.paths, ref.path), append(r.hashes, ref.hash), append(r.modules, ref.module)
		r.started, r.runs = append(r.started, x.Started), append(r.runs, id)
	}
}

func (r *toolRows) args() []any {
	return []any{r.paths, r.hashes, r.modules, r.started, r.runs}
}

func (s *pgStore) path() string { return s.name }
func (s *pgStore) shared() bool { return true }
func (s *pgStore) close() error {
	s.pool.Close()
	return nil
}

// lockTables is the first statement of every write transaction (see the
// storage comment above).
const lockTables = "LOCK TABLE " + pgTables + " IN ROW EXCLUSIVE MODE"

func (s *pgStore) apply(batch []*write, owner string, now time.Time) error {
	pb := &pgBatch{b: &pgx.Batch{}, owner: owner, now: now, fences: map[int]fence{}, creates: map[int]string{}}
	pb.b.Queue(lockTables)
	if s.nosync && slices.ContainsFunc(batch, func(w *write) bool { return w.sync }) {
		pb.b.Queue("SET LOCAL synchronous_commit = on")
	}
	if err := pb.queuePayloads(batch); err != nil {
		return err
	}
	// Entries go in one statement per stretch between resets (a reset
	// deletes what came before it in the batch, not what comes after); a
	// call written twice keeps its last entry, as a bbolt Put does.
	// Every write is fenced: one to a run another owner holds changes no
	// row, and fails the batch with ErrClaimed.
	for _, w := range batch {
		if w.meta != nil {
			pb.queueRun(w)
		}
		if w.entry != nil {
			pb.pend.add(w.run, w.seq, w.entry, w.fence)
		}
		if w.reset {
			pb.queueReset(w)
		}
	}
	pb.flush()
	pb.queueCounts(batch)
	return pgx.BeginFunc(context.Background(), s.pool, pb.send)
}

// queueCounts keeps the call count of every run the batch ended (its
// entries are in by then); a run written as running has none (NULL: a
// listing counts it).
func (pb *pgBatch) queueCounts(batch []*write) {
	last := map[string]bool{}
	for _, w := range batch {
		if w.meta != nil {
			last[w.run] = w.ended
		}
	}
	var ended []string
	for id, e := range last {
		if e {
			ended = append(ended, id)
		}
	}
	if len(ended) == 0 {
		return
	}
	slices.Sort(ended)
	pb.b.Queue(`UPDATE agentos_journal_runs r SET calls = (SELECT count(*) FROM agentos_journal_entries e WHERE e.run = r.id)
		WHERE r.id = ANY($1)`, ended)
}

// pgBatch is one write transaction being queued: its statements, and what
// each fenced statement or new run's insert must report.
type pgBatch struct {
	b       *pgx.Batch
	owner   string
	now     time.Time
	pend    entryRows
	fences  map[int]fence  // index in the batch -> what its statement must do
	creates map[int]string // index in the batch of a new run's insert -> its id
}

// queuePayloads queues the share locks of the runs written, then the
// sources and payloads.
func (pb *pgBatch) queuePayloads(batch []*write) error {
	b := pb.b
	// Payloads and sources first, in hash order: two nodes putting the same
	// ones never wait for each other in opposite orders.
	sources, blobs := map[string][]byte{}, map[string][]byte{}
	for _, w := range batch {
		if w.run == "" {
			return fmt.Errorf("journal: a write without a run id or hash")
		}
		if _, ok := sources[w.run]; w.source != nil && !ok {
			sources[w.run] = w.source
		}
		for _, x := range w.blobs {
			blobs[x.hash] = x.data
		}
	}
	// The runs written are share-locked first, in id order: a claim by
	// another node waits for this transaction, or this one waits for the
	// claim and then sees it (the fences below read committed rows).
	runs := map[string][]byte{}
	for _, w := range batch {
		if w.meta != nil || w.entry != nil || w.reset {
			runs[w.run] = nil
		}
	}
	if len(runs) > 0 {
		b.Queue("SELECT 1 FROM agentos_journal_runs WHERE id = ANY($1) ORDER BY id FOR SHARE", sortedKeys(runs))
	}
	if len(sources) > 0 {
		hashes, data := sortedPairs(sources)
		b.Queue(`INSERT INTO agentos_journal_sources (hash, source) SELECT * FROM unnest($1::text[], $2::bytea[])
			ON CONFLICT (hash) DO NOTHING`, hashes, data)
	}
	if len(blobs) > 0 {
		hashes, data := sortedPairs(blobs)
		b.Queue(`INSERT INTO agentos_journal_blobs (hash, data) SELECT * FROM unnest($1::text[], $2::bytea[])
			ON CONFLICT (hash) DO NOTHING`, hashes, data)
	}
	return nil
}

// sortedPairs are m's keys in order and their values.
func sortedPairs(m map[string][]byte) ([]string, [][]byte) {
	keys := sortedKeys(m)
	data := make([][]byte, len(keys))
	for i, k := range keys {
		data[i] = m[k]
	}
	return keys, data
}

// flush queues the pending entries as one fenced insert.
func (pb *pgBatch) flush() {
	b, pend, owner, now := pb.b, pb.pend, pb.owner, pb.now
	if len(pend.runs) > 0 {
		pb.fences[b.Len()] = fence{rows: int64(len(pend.runs)), runs: pend.runs}
		b.Queue(`INSERT INTO agentos_journal_entries (run, seq, entry)
				SELECT u.run, u.seq, u.entry FROM unnest($1::text[], $2::bigint[], $3::bytea[], $6::bigint[]) AS u(run, seq, entry, fence)
				WHERE NOT EXISTS (SELECT 1 FROM agentos_journal_runs r WHERE r.id = u.run AND (`+heldByOther(4, 5)+` OR `+staleFence("u.fence")+`))
				ON CONFLICT (run, seq) DO UPDATE SET entry = excluded.entry`, pend.runs, pend.seqs, pend.entries, owner, now, pend.fences)
	}
	pb.pend = entryRows{}
}

// queueReset queues a reset of w.run's entries: the pending ones first,
// then a fenced check that no other owner holds the run, then the delete.
func (pb *pgBatch) queueReset(w *write) {
	pb.flush()
	b := pb.b
	pb.fences[b.Len()] = fence{rows: 0, runs: []string{w.run}}
	b.Queue(`SELECT 1 FROM agentos_journal_runs r WHERE r.id = $1 AND `+heldByOther(2, 3), w.run, pb.owner, pb.now)
	b.Queue("DELETE FROM agentos_journal_entries WHERE run = $1", w.run)
}

// queueRun queues the write of w's run record: a new run's insert, a
// claim, or a fenced update.
func (pb *pgBatch) queueRun(w *write) {
	b, owner, now, fences, creates := pb.b, pb.owner, pb.now, pb.fences, pb.creates
	x := w.index
	started := x.Started
	defer pb.queueToolRuns(w, x)
	var until *time.Time
	if w.claim {
		until = &w.until
	}
	switch {
	case w.create:
		creates[b.Len()] = w.run
		b.Queue(`INSERT INTO agentos_journal_runs (id, started, meta, owner, lease_until, fence) VALUES ($1, $2, $3, $4, $5, 1)
			ON CONFLICT (id) DO NOTHING`, w.run, started, w.meta, owner, until)
	case w.claim:
		fences[b.Len()] = fence{rows: 1, runs: []string{w.run}, token: w.fence}
		b.Queue(`INSERT INTO agentos_journal_runs AS r (id, started, meta, owner, lease_until) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO UPDATE SET started = excluded.started, meta = excluded.meta, owner = excluded.owner, lease_until = excluded.lease_until, calls = NULL
			WHERE NOT (`+heldByOther(4, 6)+` OR `+staleFence("$7::bigint")+`)`, w.run, started, w.meta, owner, until, now, w.fence)
	default:
		fences[b.Len()] = fence{rows: 1, runs: []string{w.run}, token: w.fence}
		b.Queue(`INSERT INTO agentos_journal_runs AS r (id, started, meta) VALUES ($1, $2, $3)
			ON CONFLICT (id) DO UPDATE SET started = excluded.started, meta = excluded.meta, calls = NULL
			WHERE NOT (`+heldByOther(4, 5)+` OR `+staleFence("$6::bigint")+`)`, w.run, started, w.meta, owner, now, w.fence)
	}
}

// queueToolRuns queues the update of w's run in the tool index (after its
// run's row: a write fenced off fails the batch, and changes nothing).
func (pb *pgBatch) queueToolRuns(w *write, x indexed) {
	if !w.create {
		pb.b.Queue("DELETE FROM agentos_journal_tool_runs WHERE run = $1", w.run)
	}
	var rows toolRows
	rows.add(x, w.run)
	if len(rows.runs) > 0 {
		pb.b.Queue(insertToolRuns, rows.args()...)
	}
}

// send sends the batch in tx and checks every fenced statement's and new
// run's count: ErrFenced, ErrClaimed, errRunExists.
func (pb *pgBatch) send(tx pgx.Tx) error {
	ctx := context.Background()
	b := pb.b
	res := tx.SendBatch(ctx, b)
	for i := range b.Len() {
		tag, err := res.Exec()
		if err != nil {
			res.Close()
			return err
		}
		if id, ok := pb.creates[i]; ok && tag.RowsAffected() == 0 {
			res.Close()
			return fmt.Errorf("%w: %q", errRunExists, id)
		}
		if f, ok := pb.fences[i]; ok && tag.RowsAffected() != f.rows {
			res.Close()
			runs := strings.Join(slices.Compact(slices.Sorted(slices.Values(f.runs))), ", ")
			if f.token > 0 {
				return fmt.Errorf("%w: run %s was claimed again after this node's claim (token %d): this node may no longer write it", ErrFenced, runs, f.token)
			}
			return fmt.Errorf("%w: another node claimed run %s: this node may no longer write it", ErrClaimed, runs)
		}
	}
	return res.Close()
}

// heldByOther is the condition "run r is held by another owner than
// parameter $owner, with a claim live at the time in parameter $now".
func heldByOther(owner, now int) string {
	return fmt.Sprintf(`r.owner <> '' AND r.owner <> $%d AND r.lease_until IS NOT NULL AND r.lease_until > $%d`, owner, now)
}

// staleFence is the condition "run r has another fencing token than
// token" (an SQL expression; a token of 0 is no token: never stale).
func staleFence(token string) string {
	return fmt.Sprintf(`(%s > 0 AND r.fence <> %s)`, token, token)
}

// fence is what a fenced statement must report: rows rows changed (or, for
// a check, found) when no other node holds any of runs; token is the
// write's fencing token, if it has one.
type fence struct {
	rows  int64
	runs  []string
	token int64
}

// entryRows are entries for one multi-row insert, each call once.
type entryRows struct {
	runs    []string
	seqs    []int64
	entries [][]byte
	fences  []int64
	at      map[string]int // run + "\x00" + seq -> index
}

func (r *entryRows) add(run string, seq uint64, entry []byte, fence int64) {
	key := run + "\x00" + strconv.FormatUint(seq, 10)
	if i, ok := r.at[key]; ok {
		r.entries[i], r.fences[i] = entry, fence
		return
	}
	if r.at == nil {
		r.at = map[string]int{}
	}
	r.at[key] = len(r.runs)
	r.runs, r.seqs, r.entries, r.fences = append(r.runs, run), append(r.seqs, int64(seq)), append(r.entries, entry), append(r.fences, fence)
}

func sortedKeys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// scanRuns reads rows of (meta, owner, lease_until).
func scanRuns(rows pgx.Rows) ([]RunMeta, error) {
	var out []RunMeta
	for rows.Next() {
		var raw []byte
		var owner string
		var until *time.Time
		if err := rows.Scan(&raw, &owner, &until); err != nil {
			return nil, err
		}
		var m RunMeta
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		m.Owner = owner
		if until != nil {
			m.LeaseUntil = *until
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func (s *pgStore) runs() ([]RunMeta, error) {
	rows, err := s.pool.Query(context.Background(), "SELECT meta, owner, lease_until FROM agentos_journal_runs")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanRuns(rows)
}

// listedCols are the columns scanListed reads, of the runs r.
const listedCols = `SELECT r.meta, r.owner, r.lease_until,
	COALESCE(r.calls, (SELECT count(*) FROM agentos_journal_entries e WHERE e.run = r.id))`

func (s *pgStore) runsPage(at runCursor, n int, oldest bool) ([]RunMeta, error) {
	const cols = listedCols + ` FROM agentos_journal_runs r`
	past, order := "<", " ORDER BY started DESC, id DESC"
	if oldest {
		past, order = ">", " ORDER BY started, id"
	}
	var rows pgx.Rows
	var err error
	if at.id == "" {
		rows, err = s.pool.Query(context.Background(), cols+order+" LIMIT $1", n)
	} else {
		rows, err = s.pool.Query(context.Background(), cols+" WHERE (started, id) "+past+" ($1, $2)"+order+" LIMIT $3", at.started, at.id, n)
	}
	if err != nil {
		return nil, err
	}
	return scanListed(rows)
}

// toolRunsPage lists up to n runs of path (at hash) past at, newest
// first, from the tool index.
func (s *pgStore) toolRunsPage(path, hash string, at runCursor, n int) ([]RunMeta, error) {
	// One query per case, each a range scan of one index: by start
	// (every version) or by version, from the cursor.
	where, args := "t.path = $1 AND NOT t.module", []any{path, n}
	if hash != "" {
		where, args = where+" AND t.hash = $3", append(args, hash)
	}
	if at.id != "" {
		where, args = where+fmt.Sprintf(" AND (t.started, t.run) < ($%d, $%d)", len(args)+1, len(args)+2), append(args, at.started, at.id)
	}
	rows, err := s.pool.Query(context.Background(), listedCols+` FROM agentos_journal_tool_runs t JOIN agentos_journal_runs r ON r.id = t.run
		WHERE `+where+` ORDER BY t.started DESC, t.run DESC LIMIT $2`, args...)
	if err != nil {
		return nil, err
	}
	return scanListed(rows)
}

// versionsOf reads path's versions from the tool index: per version and
// role, its count, first start, and latest run (an index lookup each).
func (s *pgStore) versionsOf(path string) ([]Version, error) {
	rows, err := s.pool.Query(context.Background(), `WITH v AS (
			SELECT hash, module, count(*) AS n, min(started) AS first FROM agentos_journal_tool_runs
			WHERE path = $1 AND hash <> '' GROUP BY hash, module)
		SELECT v.hash, v.module, v.n, v.first, l.started, l.run FROM v, LATERAL (
			SELECT started, run FROM agentos_journal_tool_runs t WHERE t.path = $1 AND t.module = v.module AND t.hash = v.hash
			ORDER BY started DESC, run DESC LIMIT 1) l`, path)
	if err != nil {
		return nil, err
	}
	var out []Version
	at := map[string]int{}
	var hash, run string
	var module bool
	var n int
	var first, last time.Time
	_, err = pgx.ForEachRow(rows, []any{&hash, &module, &n, &first, &last, &run}, func() error {
		i, ok := at[hash]
		if !ok {
			i, at[hash] = len(out), len(out)
			out = append(out, Version{Hash: hash, First: first.UTC()})
		}
		out[i].addRole(module, n, first.UTC(), last.UTC(), run)
		return nil
	})
	return out, err
}

// scanListed reads rows of listedCols, and closes them.
func scanListed(rows pgx.Rows) ([]RunMeta, error) {
	defer rows.Close()
	var out []RunMeta
	for rows.Next() {
		var raw []byte
		var owner string
		var until *time.Time
		var m RunMeta
		if err := rows.Scan(&raw, &owner, &until, &m.Calls); err != nil {
			return nil, err
		}
		calls := m.Calls
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		m.Owner, m.Calls = owner, calls
		if until != nil {
			m.LeaseUntil = *until
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func (s *pgStore) prefixed(id string) ([]RunMeta, error) {
	// LIKE on a "C" column with a fixed prefix is an index range scan.
	pattern := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(id) + "%"
	rows, err := s.pool.Query(context.Background(), `SELECT meta, owner, lease_until FROM agentos_journal_runs WHERE id LIKE $1 ORDER BY id`, pattern)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanRuns(rows)
}

func (s *pgStore) exists(id string) (bool, error) {
	var found bool
	err := s.pool.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM agentos_journal_runs WHERE id = $1)", id).Scan(&found)
	return found, err
}

// entries reads a run's entries and the payloads they refer to from one
// snapshot (a concurrent Prune cannot take a payload away in between).
func (s *pgStore) entries(id string) ([]Entry, error) {
	ctx := context.Background()
	var out []Entry
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		out = nil
		rows, err := tx.Query(ctx, "SELECT entry FROM agentos_journal_entries WHERE run = $1 ORDER BY seq", id)
		if err != nil {
			return err
		}
		var raws [][]byte
		var refs []string
		for rows.Next() {
			var v []byte
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return err
			}
			raws = append(raws, v)
			refs = append(refs, blobRefs(v)...)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		payloads, err := s.blobs(ctx, tx, refs)
		if err != nil {
			return err
		}
		out, err = decodeEntries(id, raws, func(h string) []byte { return payloads[h] })
		return err
	})
	return out, err
}

// blobs returns the payloads kept under hashes (those it keeps).
func (s *pgStore) blobs(ctx context.Context, tx pgx.Tx, hashes []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(hashes) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, "SELECT hash, data FROM agentos_journal_blobs WHERE hash = ANY($1)", hashes)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var h string
		var data []byte
		if err := rows.Scan(&h, &data); err != nil {
			return nil, err
		}
		out[h] = data
	}
	return out, rows.Err()
}

func (s *pgStore) count(id string) (int, error) {
	var n int
	err := s.pool.QueryRow(context.Background(), "SELECT count(*) FROM agentos_journal_entries WHERE run = $1", id).Scan(&n)
	return n, err
}

func (s *pgStore) source(hash string) ([]byte, bool, error) {
	var src []byte
	err := s.pool.QueryRow(context.Background(), "SELECT source FROM agentos_journal_sources WHERE hash = $1", hash).Scan(&src)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if src == nil && err == nil {
		src = []byte{}
	}
	return src, err == nil, err
}

// claim takes the run and increments its fencing token in one statement,
// only while the run has not ended: the claim of a run another node
// finished is refused (ErrEnded), whether or not that node still holds it.
func (s *pgStore) claim(run, owner string, until, now time.Time) (int64, bool, error) {
	ctx := context.Background()
	var fence int64
	err := s.pool.QueryRow(ctx, `UPDATE agentos_journal_runs SET owner = $2, lease_until = $3, fence = fence + 1
		WHERE id = $1 AND (owner = '' OR owner = $2 OR lease_until IS NULL OR lease_until <= $4)
		AND convert_from(meta, 'UTF8')::jsonb->>'status' IN ($5, $6)
		RETURNING fence`, run, owner, until, now, StatusRunning, StatusQuarantined).Scan(&fence)
	if err == nil {
		return fence, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, false, err
	}
	var status string
	err = s.pool.QueryRow(ctx, `SELECT convert_from(meta, 'UTF8')::jsonb->>'status' FROM agentos_journal_runs WHERE id = $1`, run).Scan(&status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, fmt.Errorf("%w: %q (list them with 'agentos runs')", ErrNoRun, run)
	case err != nil:
		return 0, false, err
	case status != StatusRunning && status != StatusQuarantined:
		return 0, false, endedError(run, status)
	}
	return 0, false, nil
}

// fence returns run's current fencing token.
func (s *pgStore) fence(run string) (int64, error) {
	var fence int64
	err := s.pool.QueryRow(context.Background(), "SELECT fence FROM agentos_journal_runs WHERE id = $1", run).Scan(&fence)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: %q", ErrNoRun, run)
	}
	return fence, err
}

// endedError refuses the claim of a run that ended with status.
func endedError(run, status string) error {
	return fmt.Errorf("%w: run %s ended %s: it is not resumed again (replay it with 'agentos replay %s')", ErrEnded, run, status, run)
}

func (s *pgStore) renew(owner string, runs []string, until time.Time) ([]string, error) {
	rows, err := s.pool.Query(context.Background(), "UPDATE agentos_journal_runs SET lease_until = $3 WHERE id = ANY($1) AND owner = $2 RETURNING id", runs, owner, until)
	if err != nil {
		return nil, err
	}
	kept, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var lost []string
	for _, id := range runs {
		if !slices.Contains(kept, id) {
			lost = append(lost, id)
		}
	}
	return lost, nil
}

// release makes owner's claims on runs lapse now (the owner stays named:
// the last node that ran them).
func (s *pgStore) release(owner string, runs []string, now time.Time) error {
	if len(runs) == 0 {
		return nil
	}
	_, err := s.pool.Exec(context.Background(), "UPDATE agentos_journal_runs SET lease_until = $3 WHERE id = ANY($1) AND owner = $2", runs, owner, now)
	return err
}

// liveBytes is what the tables take on disk (at least what they store).
func (s *pgStore) liveBytes() int64 {
	var n int64
	err := s.pool.QueryRow(context.Background(), `SELECT coalesce(sum(pg_total_relation_size(t)), 0)::bigint FROM unnest(ARRAY[
		'agentos_journal_runs', 'agentos_journal_entries', 'agentos_journal_blobs', 'agentos_journal_sources', 'agentos_journal_tool_runs']::regclass[]) AS t`).Scan(&n)
	if err != nil {
		return 1<<63 - 1 // unknown: let Prune look
	}
	return n
}

// prune scans and deletes in one transaction holding EXCLUSIVE locks:
// every node's recording waits, reads go on.
func (s *pgStore) prune(decide func(*pruneScan) pruneDrop) error {
	// The prune locks every table; a node's claim or write that locked a
	// row first can make PostgreSQL break a deadlock by failing one side:
	// the prune, which changed nothing then, scans and decides again.
	var err error
	for attempt := range pgPruneAttempts {
		if err = s.pruneOnce(decide); !isPgConflict(err) {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
	}
	return err
}

// pgPruneAttempts bounds how often a prune that lost a deadlock or a
// serialization conflict is tried.
const pgPruneAttempts = 5

// isPgConflict reports whether err is PostgreSQL failing a transaction to
// resolve a conflict with another (deadlock_detected,
// serialization_failure): trying it again is safe and expected.
func isPgConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

func (s *pgStore) pruneOnce(decide func(*pruneScan) pruneDrop) error {
	ctx := context.Background()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "LOCK TABLE "+pgTables+" IN EXCLUSIVE MODE"); err != nil {
			return err
		}
		scan, err := scanPg(ctx, tx)
		if err != nil {
			return err
		}
		return deletePg(ctx, tx, decide(scan))
	})
}

// eachRow runs the query sql in tx and calls fn after scanning each row
// into scans; the rows are closed when it returns (pgx.ForEachRow).
func eachRow(ctx context.Context, tx pgx.Tx, sql string, scans []any, fn func() error) error {
	rows, err := tx.Query(ctx, sql)
	if err != nil {
		return err
	}
	_, err = pgx.ForEachRow(rows, scans, fn)
	return err
}

// scanPg sizes every run (its metadata and entries, with the payloads
// they refer to), payload and source, as scanBolt does.
func scanPg(ctx context.Context, tx pgx.Tx) (*pruneScan, error) {
	scan := &pruneScan{blobSize: map[string]int64{}, sourceSize: map[string]int64{}}
	byID := map[string]*runSize{}
	var id string
	var raw []byte
	err := eachRow(ctx, tx, "SELECT id, meta FROM agentos_journal_runs", []any{&id, &raw}, func() error {
		r := &runSize{own: int64(len(id) + len(raw))}
		if err := json.Unmarshal(raw, &r.meta); err != nil {
			return err
		}
		byID[id] = r
		scan.runs = append(scan.runs, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := sizePgEntries(ctx, tx, byID); err != nil {
		return nil, err
	}
	for _, q := range []struct {
		sql  string
		into map[string]int64
	}{
		{"SELECT hash, length(hash) + length(data) FROM agentos_journal_blobs", scan.blobSize},
		{"SELECT hash, length(hash) + length(source) FROM agentos_journal_sources", scan.sourceSize},
	} {
		var h string
		var n int64
		if err := eachRow(ctx, tx, q.sql, []any{&h, &n}, func() error { q.into[h] = n; return nil }); err != nil {
			return nil, err
		}
	}
	return scan, nil
}

// sizePgEntries adds to each run of byID its entries' sizes as bbolt
// counts them (an 8-byte key and the value), and the payloads they refer
// to, read only from the entries that hold a reference.
func sizePgEntries(ctx context.Context, tx pgx.Tx, byID map[string]*runSize) error {
	seen := map[string]map[string]bool{}
	var run string
	var seq, size int64
	var v []byte
	return eachRow(ctx, tx, `SELECT run, seq, length(entry),
		CASE WHEN position('_blob":"'::bytea IN entry) > 0 OR position('_chunks":{'::bytea IN entry) > 0 THEN entry END
		FROM agentos_journal_entries ORDER BY run, seq`, []any{&run, &seq, &size, &v}, func() error {
		r := byID[run]
		if r == nil {
			return nil
		}
		r.own += 8 + size
		if v != nil {
			if seen[run] == nil {
				seen[run] = map[string]bool{}
			}
			r.addRefs(seen[run], v)
		}
		return nil
	})
}

// deletePg deletes the runs (with their entries), payloads and sources of
// drop.
func deletePg(ctx context.Context, tx pgx.Tx, drop pruneDrop) error {
	for _, d := range []struct {
		sql string
		ids []string
	}{
		{"DELETE FROM agentos_journal_tool_runs WHERE run = ANY($1)", drop.runs},
		{"DELETE FROM agentos_journal_entries WHERE run = ANY($1)", drop.runs},
		{"DELETE FROM agentos_journal_runs WHERE id = ANY($1)", drop.runs},
		{"DELETE FROM agentos_journal_blobs WHERE hash = ANY($1)", drop.blobs},
		{"DELETE FROM agentos_journal_sources WHERE hash = ANY($1)", drop.sources},
	} {
		if len(d.ids) == 0 {
			continue
		}
		if _, err := tx.Exec(ctx, d.sql, d.ids); err != nil {
			return err
		}
	}
	return nil
}

// check reads everything: every run's metadata and every entry decode, and
// every payload an entry refers to is kept.
func (s *pgStore) check(name string) error {
	ctx := context.Background()
	var problems []string
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		problems, err = s.checkTx(ctx, tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("checking journal %s: %w", name, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("journal %s is inconsistent: %s", name, strings.Join(problems, "; "))
	}
	return nil
}

// checkTx is check's reading, in one read-only transaction: the problems
// found.
func (s *pgStore) checkTx(ctx context.Context, tx pgx.Tx) ([]string, error) {
	problems, err := checkPgRuns(ctx, tx)
	if err != nil {
		return nil, err
	}
	bad, need, err := checkPgEntries(ctx, tx)
	if err != nil {
		return nil, err
	}
	problems = append(problems, bad...)
	hashes := make([]string, 0, len(need))
	for h := range need {
		hashes = append(hashes, h)
	}
	have, err := s.blobs(ctx, tx, hashes)
	if err != nil {
		return nil, err
	}
	slices.Sort(hashes)
	for _, h := range hashes {
		if _, ok := have[h]; !ok {
			problems = append(problems, fmt.Sprintf("%s refers to payload %s, which the journal lacks", need[h], h))
		}
	}
	return problems, nil
}

// checkPgRuns reports the runs whose metadata does not decode or names
// another id.
func checkPgRuns(ctx context.Context, tx pgx.Tx) (problems []string, err error) {
	var id string
	var raw []byte
	err = eachRow(ctx, tx, "SELECT id, meta FROM agentos_journal_runs", []any{&id, &raw}, func() error {
		var m RunMeta
		if err := json.Unmarshal(raw, &m); err != nil || m.ID != id {
			problems = append(problems, fmt.Sprintf("run %s: its metadata does not decode (%v) or names another id (%q)", id, err, m.ID))
		}
		return nil
	})
	return problems, err
}

// checkPgEntries reports the entries that do not decode or hold another
// sequence number, and returns the payloads the entries refer to (hash ->
// an entry that refers to it).
func checkPgEntries(ctx context.Context, tx pgx.Tx) (problems []string, need map[string]string, err error) {
	need = map[string]string{}
	var run string
	var seq int64
	var v []byte
	err = eachRow(ctx, tx, "SELECT run, seq, entry FROM agentos_journal_entries", []any{&run, &seq, &v}, func() error {
		var e storedEntry
		if err := json.Unmarshal(v, &e); err != nil || e.Seq != uint64(seq) {
			problems = append(problems, fmt.Sprintf("run %s call #%d: the entry does not decode (%v) or holds another sequence number (%d)", run, seq, err, e.Seq))
			return nil
		}
		for _, h := range blobRefs(v) {
			need[h] = fmt.Sprintf("run %s call #%d", run, seq)
		}
		return nil
	})
	return problems, need, err
}
