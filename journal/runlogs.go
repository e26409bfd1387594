package journal

// MaxRunLogBytes bounds the bytes of logs a run's record keeps (Run.SetLogs):
// a run's logs are read with its record (a listing reads records), so they
// stay small; the lines past the bound are counted in RunMeta.LogsCut.
const MaxRunLogBytes = 16 << 10

// SetLogs keeps lines as the run's logs, written with its end (or its next
// metadata write): the run's secrets scrubbed, at most MaxRunLogBytes of
// them, the first lines first; a line crossing the bound is shortened to
// it and counted in LogsCut with every line after it. A call after End is
// ignored. IMPORTANT: the logs are informative: replay does not compare
// them.
func (r *Run) SetLogs(lines []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.meta.Logs, r.meta.LogsCut = boundLogs(lines, func(s string) string { return r.j.redact.textIn(s, r.scope) })
}

// SetTraceID records the OpenTelemetry trace id of the span the run runs
// under, unless the run already has one (a recovered run keeps the trace
// it began in). It is written with the run's next metadata write (a module
// it requires, its end), never on its own: a traced run costs no extra
// write. A call after End is ignored.
func (r *Run) SetTraceID(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended || r.meta.TraceID != "" || id == "" {
		return
	}
	r.meta.TraceID = id
}

// boundLogs is lines scrubbed by scrub and cut to MaxRunLogBytes, with
// how many lines were left out or shortened.
func boundLogs(lines []string, scrub func(string) string) (kept []string, cut int) {
	room := MaxRunLogBytes
	for i, l := range lines {
		l = scrub(l)
		if len(l) > room {
			if room > 0 {
				kept = append(kept, cutUTF8(l, room))
			}
			return kept, len(lines) - i
		}
		kept = append(kept, l)
		room -= len(l)
	}
	return kept, 0
}

// cutUTF8 is s cut to at most n bytes, not inside a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
