package journal

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// appendJSON appends the run's metadata as JSON to b: the same document
// encoding/json produces with HTML escaping off (SetEscapeHTML(false)), written by hand
// for the reason Entry.appendJSON is: every run writes its metadata twice
// (Begin and End), and reflection over RunMeta cost about 19 µs a write
// in place, ten times what it costs in a loop. IMPORTANT: a field added to
// RunMeta (or Host, Caller, Limits, Module) MUST be added here in its
// declared order; TestMetaJSONIsEncodingJSONs holds the two encoders to
// the same bytes field by field.
//
// Like encoding/json it fails on an argument, result or error that is not
// valid JSON, and on a time whose year is outside 0–9999.
func (m *RunMeta) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = appendString(b, m.ID)
	b = append(b, `,"kind":`...)
	b = appendString(b, m.Kind)
	b = appendStringField(b, `,"tool":`, m.Tool)
	b = appendStringField(b, `,"hash":`, m.Hash)
	if m.Pinned {
		b = append(b, `,"pinned":true`...)
	}
	if len(m.Modules) > 0 {
		b = appendModules(b, m.Modules)
	}
	b = appendStringField(b, `,"commit":`, m.Commit)
	if m.AtVersion {
		b = append(b, `,"at_version":true`...)
	}
	if b, err = appendRawField(b, `,"args":`, m.Args); err != nil {
		return nil, err
	}
	if b, err = appendTime(append(b, `,"started":`...), m.Started); err != nil {
		return nil, err
	}
	if !m.Ended.IsZero() {
		if b, err = appendTime(append(b, `,"ended":`...), m.Ended); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"status":`...)
	b = appendString(b, m.Status)
	if b, err = appendRawField(b, `,"result":`, m.Result); err != nil {
		return nil, err
	}
	if b, err = appendRawField(b, `,"error":`, m.Error); err != nil {
		return nil, err
	}
	b = appendStringField(b, `,"reason":`, m.Reason)
	if m.ArgsRedacted {
		b = append(b, `,"args_redacted":true`...)
	}
	b = appendStringField(b, `,"replay_of":`, m.ReplayOf)
	if m.Caller != nil {
		b = m.Caller.appendJSON(append(b, `,"caller":`...))
	}
	if m.Limits != nil {
		b = m.Limits.appendJSON(append(b, `,"limits":`...))
	}
	b = appendIntField(b, `,"calls":`, int64(m.Calls))
	if len(m.Logs) > 0 {
		b = append(b, `,"logs":[`...)
		for i, l := range m.Logs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, l)
		}
		b = append(b, ']')
	}
	b = appendIntField(b, `,"logs_cut":`, int64(m.LogsCut))
	b = appendStringField(b, `,"trace_id":`, m.TraceID)
	if b, err = m.Host.appendFields(b); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendFields appends the host's fields, which RunMeta embeds.
func (h *Host) appendFields(b []byte) ([]byte, error) {
	var err error
	b = appendStringField(b, `,"isolation":`, h.Isolation)
	b = appendIntField(b, `,"host_pid":`, int64(h.PID))
	b = appendStringField(b, `,"host_boot":`, h.Boot)
	if !h.Since.IsZero() {
		if b, err = appendTime(append(b, `,"host_since":`...), h.Since); err != nil {
			return nil, err
		}
	}
	b = appendStringField(b, `,"interrupted":`, h.Interrupted)
	b = appendStringField(b, `,"quarantine":`, h.Quarantine)
	b = appendStringField(b, `,"owner":`, h.Owner)
	if !h.LeaseUntil.IsZero() {
		if b, err = appendTime(append(b, `,"lease_until":`...), h.LeaseUntil); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (c *Caller) appendJSON(b []byte) []byte {
	b = append(b, `{"process":`...)
	b = appendString(b, c.Process)
	b = append(b, `,"grants":`...)
	if c.Grants == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, g := range c.Grants {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"right":`...)
			b = appendString(b, string(g.Right))
			b = appendStringField(b, `,"scope":`, g.Scope)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func (l *Limits) appendJSON(b []byte) []byte {
	n := len(b)
	b = appendIntField(append(b, '{'), `,"timeout_ns":`, int64(l.Timeout))
	b = appendIntField(b, `,"memory_bytes":`, l.MemoryBytes)
	b = appendIntField(b, `,"max_call_depth":`, int64(l.MaxCallDepth))
	b = appendIntField(b, `,"max_output_bytes":`, int64(l.MaxOutputBytes))
	if len(b) > n+1 {
		b = append(b[:n+1], b[n+2:]...) // the first field's comma
	}
	return append(b, '}')
}

func appendModules(b []byte, ms []Module) []byte {
	b = append(b, `,"modules":[`...)
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"path":`...)
		b = appendString(b, m.Path)
		b = append(b, `,"hash":`...)
		b = appendString(b, m.Hash)
		b = appendStringField(b, `,"as":`, m.As)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendStringField appends key and s unless s is empty (omitempty).
func appendStringField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

// appendIntField appends key and n unless n is 0 (omitempty).
func appendIntField(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), n, 10)
}

// appendRawField appends key and raw compacted, as encoding/json writes a
// json.RawMessage, unless raw is empty (omitempty).
func appendRawField(b []byte, key string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return b, nil
	}
	buf := bytes.NewBuffer(append(b, key...))
	if err := json.Compact(buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// appendTime appends t quoted as time.Time's MarshalJSON writes it.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}
