package pii

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/agentos-run/agentos/driver"
	"github.com/agentos-run/agentos/driver/llm"
)

// Device wraps the data driver d, named name: its requests are restored
// first when restore_to covers them (Restores), its responses and error
// messages tokenized. nil t: d itself.
//
// IMPORTANT: the wrapped device MUST sit below the journal's middleware
// (in the executor's mux), so that the journal records the request with
// its tokens and the tokenized response.
func (t *Tokenizer) Device(name string, d driver.Device) driver.Device {
	if t == nil {
		return d
	}
	return device{t: t, name: name, d: d}
}

type device struct {
	t    *Tokenizer
	name string
	d    driver.Device
}

func (w device) Do(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
	return w.t.do(ctx, w.name, op, req, w.d.Do)
}

func (t *Tokenizer) do(ctx context.Context, name, op string, req json.RawMessage, next func(context.Context, string, json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	// echo holds the values this call's request got back: the reply and
	// the error are searched for them in every encoding, since the
	// detectors miss, e.g., ada%40example.com in a URL a fetch error repeats.
	var echo Echo
	if t.Restores(name, req) {
		r, e, err := t.RestoreEcho(req)
		if err != nil {
			return nil, driver.Errorf(driver.CodeInvalid, "%s.%s: %v", name, op, err)
		}
		req, echo = r, e
	}
	resp, err := next(ctx, op, req)
	if err != nil {
		return nil, t.Error(echo.Error(err))
	}
	out, err := t.JSON(echo.JSON(resp))
	if err != nil {
		return nil, driver.Errorf(driver.CodeIO, "%s.%s: tokenizing the response: %v; the response was dropped", name, op, err)
	}
	return out, nil
}

// Error returns err with its message tokenized: a *driver.Error keeps its
// code (the whole message is read, wrapping text included). err itself is
// returned when its message holds nothing to tokenize.
func (t *Tokenizer) Error(err error) error {
	if t == nil || err == nil || len(t.dets) == 0 {
		return err
	}
	e := driver.AsError(err)
	full := err.Error()
	msg, terr := t.String(full)
	if terr != nil {
		return &driver.Error{Code: e.Code, Message: "the error's message was dropped: it held personal data that could not be tokenized: " + terr.Error()}
	}
	if msg == full {
		return err
	}
	return &driver.Error{Code: e.Code, Message: msg}
}

// Session wraps a per-run driver like Device does.
func (t *Tokenizer) Session(name string, s driver.Session) driver.Session {
	if t == nil {
		return s
	}
	return session{t: t, name: name, s: s}
}

type session struct {
	t    *Tokenizer
	name string
	s    driver.Session
}

func (w session) Open() driver.RunDevice {
	rd := w.s.Open()
	return runDevice{device: device{t: w.t, name: w.name, d: rd}, rd: rd}
}

type runDevice struct {
	device
	rd driver.RunDevice
}

func (w runDevice) End(ctx context.Context, success bool) error { return w.rd.End(ctx, success) }

// Middleware tokenizes the responses and error messages of the calls to
// the named drivers (all calls when none is named) and restores nothing:
// for a Host whose devices are not data drivers but carry their output,
// such as the forge's test runs. nil t: nil (driver.Chain skips it).
func (t *Tokenizer) Middleware(drivers ...string) driver.Middleware {
	if t == nil {
		return nil
	}
	return func(next driver.Host) driver.Host {
		return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
			resp, err := next.Do(ctx, c)
			if len(drivers) > 0 && !slices.Contains(drivers, c.Driver) {
				return resp, err
			}
			if err != nil {
				return nil, t.Error(err)
			}
			out, err := t.JSON(resp)
			if err != nil {
				return nil, driver.Errorf(driver.CodeIO, "%s: tokenizing the response: %v; the response was dropped", c, err)
			}
			return out, nil
		})
	}
}

// ModelMiddleware tokenizes what a chat request (driver llm, op complete)
// sends to the model: the content of every message but the system prompt,
// and the arguments of the tool calls. The request is re-encoded only when
// something was replaced. nil t: nil (driver.Chain skips it).
//
// IMPORTANT: it MUST sit above the journal's middleware (listed before it
// in driver.Chain), so that the journal records the tokenized request and
// a replay or a resumed run, tokenizing the same way, asks the same.
func (t *Tokenizer) ModelMiddleware() driver.Middleware {
	if t == nil {
		return nil
	}
	return func(next driver.Host) driver.Host {
		return driver.HostFunc(func(ctx context.Context, c driver.Call) (json.RawMessage, error) {
			if c.Driver == llm.Driver && c.Op == llm.OpComplete {
				req, err := t.ModelRequest(c.Request)
				if err != nil {
					return nil, driver.Errorf(driver.CodeIO, "%s: tokenizing the request to the model: %v; it was not sent", c, err)
				}
				c.Request = req
			}
			return next.Do(ctx, c)
		})
	}
}

// ModelRequest tokenizes an llm.Request as ModelMiddleware does; req
// itself is returned when nothing changed.
func (t *Tokenizer) ModelRequest(req json.RawMessage) (json.RawMessage, error) {
	if t == nil || len(t.dets) == 0 {
		return req, nil
	}
	var r llm.Request
	if err := json.Unmarshal(req, &r); err != nil {
		return nil, errors.New("the request is not an llm.Request: " + err.Error())
	}
	changed := false
	for i := range r.Messages {
		m := &r.Messages[i]
		if m.Role == llm.RoleSystem {
			continue
		}
		s, err := t.Text(m.Content)
		if err != nil {
			return nil, err
		}
		changed = changed || s != m.Content
		m.Content = s
		for j := range m.ToolCalls {
			a, err := t.Text(m.ToolCalls[j].Arguments)
			if err != nil {
				return nil, err
			}
			changed = changed || a != m.ToolCalls[j].Arguments
			m.ToolCalls[j].Arguments = a
		}
	}
	if !changed {
		return req, nil
	}
	return json.Marshal(r)
}
