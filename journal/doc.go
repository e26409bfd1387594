// Package journal records every driver call of a run in a bbolt file (Open),
// or in a PostgreSQL database several nodes share (OpenPostgres), and
// answers them again: to replay a run offline, to replay it against a
// patched tool, and to resume a run that a crash interrupted, on this node
// or, with PostgreSQL, on another.
//
// # The choke point
//
// A run's driver calls all pass through one driver.Host (see package
// driver). The journal wraps that Host with a Middleware: there is no second
// path. Each call is stored under (run id, sequence number) with its driver,
// operation, request (canonical JSON, credentials redacted), response or
// error, and duration. A model call's request and response are stored as
// content-addressed chunks, each message once (see Options.ChunkDrivers):
// reading a run puts them back byte for byte.
//
// # Modes
//
//	live     no journal: the Host is used as is
//	record   Begin + Run.Middleware: every call goes to the devices and is recorded
//	replay   Replayer.Middleware: every call is answered from the journal, no device is touched
//	recover  Recovery.Middleware: the recorded prefix is answered from the journal,
//	         later calls go to the devices and are appended; Recovery.Redo
//	         names recorded calls performed again (a run's /tmp writes)
//
// A run records its Host (isolation, host pid and boot id) when it begins,
// in its start record (a crash leaves the run either absent or with its
// Host: never a run recovery could mistake for another host's), and Run.Interrupt marks a run its host
// cancelled; Journal.Quarantine sets aside a run whose host died while it
// ran in-process (status "quarantined"), which Unfinished no longer lists.
//
// In replay, a call whose request differs from the recorded one, or that
// comes after the recorded end, stops the run with a *DivergenceError
// carrying a stable code ([AGENTOS-J001], [AGENTOS-J002]), the sequence
// number, and the expected and actual requests.
//
// # Durability
//
// IMPORTANT: choose with Options.Durability, knowing what a crash (kill -9,
// power loss) can cost:
//
//	SyncEach     an entry is committed and fsynced before its result is handed
//	             to the tool, and a run's start and end before Begin and End
//	             return: a crash loses nothing that the tool or the run's
//	             caller saw.
//	GroupCommit  (default) entries, a run's start (Begin), its source
//	             (PutSource) and its end (End) are queued and a writer
//	             commits them in batches, fsyncing each batch; nobody waits
//	             for the commit except a Durable run's calls and end (a
//	             DurableFor run's paid calls and end). A crash
//	             may lose what was queued or being committed: the last
//	             milliseconds (tens of them on a loaded machine) of calls,
//	             and of runs: a run whose start was lost is lost whole (it is
//	             not in the file and is not resumed, though its caller may
//	             have seen its result); a run whose end was lost is resumed
//	             by recovery (its recorded calls answered from the journal,
//	             the rest performed again, though its caller may have seen
//	             its result). (This is the embedded file; on PostgreSQL a
//	             run's start and end are committed before Begin and End
//	             return, as the claims need.)
//	NoSync       like GroupCommit but without fsync (tests, scratch): an OS
//	             crash may lose more; a process crash loses the queue.
//	WriteEach    like SyncEach but without fsync: each entry, and a run's
//	             start and end, is committed (written to the operating
//	             system, write(2)) before its result is handed on. A process
//	             crash (kill -9) loses nothing that the tool or the run's
//	             caller saw; a power loss or kernel crash may lose the
//	             commits the OS had not yet written back, and, since bbolt
//	             orders its page writes with fsync, may leave the embedded
//	             file damaged (as under NoSync). Use it where agent-OS's
//	             append-without-fsync journal is the bar; SyncEach where
//	             power loss matters.
//
// Options.SyncRuns keeps, under GroupCommit and NoSync, a run's start and
// end committed before Begin and End return (two commits per run): a crash
// then loses at most calls, never a run whose caller saw its result.
//
// The queue is one, committed in order, each batch atomically: what a crash
// leaves is always a prefix of what was written. A run's calls are never in
// the file without its start, its end never without its calls, and of runs
// begun one after another only the last can have lost its end. Every read
// of a Journal (Get, Runs, Entries, Count, Source, Unfinished) first waits
// for the writes queued before it, so a process reads what it wrote.
//
// In every mode the file stays consistent: bbolt commits are atomic, so a
// crash never leaves a torn entry or a corrupt file. OpenPostgres says what
// each mode means on PostgreSQL.
//
// # Sharing a journal
//
// A PostgreSQL journal is shared by several nodes. Each run is claimed by
// the node running it (Begin claims, a live Journal renews its claims
// every third of Options.Lease); another node resumes it only once it won
// the claim, after the claim lapsed (Claim, Recover, ErrClaimed). On the
// embedded file the file lock gives one process the whole journal, and
// every claim succeeds.
package journal
