// Package gate is the registration gate on real I/O: before a new version
// of a tool replaces the previous one, the most recent recorded runs of the
// previous version are replayed against the new source, each fed the I/O
// it recorded (a Replay message to the executor actor, sent through its
// client, actors/executor/client, with ReplayOptions.Patched), and the
// gate reports, run by run, whether the new version gives the same result,
// a different one (old and new shown), or asks for different I/O (a
// divergence, with its stable code and the call's sequence number).
//
// # What is replayed
//
// The runs of the previous version are the journal's runs whose tool is
// the path and whose content hash is the previous source's, that finished
// (ok or failed), that are not replays or recoveries themselves
// (RunMeta.ReplayOf) and whose arguments the journal kept (a run whose
// arguments were redacted replays with [REDACTED] in their place, so its
// result says nothing about the new code: it is skipped and counted in
// Report.Skipped). The most recent Options.Runs of them (default 5) are
// replayed, newest first.
//
// IMPORTANT: when the version being replaced has no such run (it was
// written and never ran: a comment-only change, or a version that did not
// compile), the runs of the newest earlier version of the path that has
// some are replayed instead (PreviousHash; never the new source's own
// runs), and Report.ReplacedHash and Report.Previous say so. Otherwise a
// change split in two writes, a harmless one then the real one, would
// reach the tool tree unjudged.
//
// IMPORTANT: a gate replay MUST NOT touch a device: every driver call is
// answered from the journal (the replay middleware), and a call the
// recording does not have stops the replay as a divergence instead of
// being performed. Each replay runs under its recorded limits, its timeout
// capped at Options.Timeout (ReplayOptions.MaxTimeout: the executor actor
// applies the cap), so a gate takes at most about Runs × Timeout /
// parallel replays. The gate holds no executor: it chooses the runs from
// the journal and the executor actor replays them, so the journal the
// gate reads MUST be the actor's.
//
// # Policy
//
// PolicyWarn (the default) reports and lets the write land. PolicyBlock
// refuses it (Report.Blocked, Report.Err wrapping ErrBlocked and naming the
// runs) when a run gave a different result or diverged, and also when a
// run could not be judged (it could not be replayed, or stopped at a
// limit) unless Options.BlockOnError is explicitly false. The caller (the
// git actor, through node) MUST then write, register and commit nothing.
// The error addresses the writer (often an agent): it says what a human
// operator can do, and does not suggest changing the policy.
package gate
