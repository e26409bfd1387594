package llm

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/agentos-run/agentos/driver"
)

// Device returns the client as a driver.Device, to be registered under
// Driver in a driver.Mux. Its one operation is "complete" (OpComplete): the
// request is a Request as JSON (unknown fields are refused), the response a
// Response as JSON. Errors are *driver.Error, as from Complete.
//
// IMPORTANT: agents MUST call the model through this device, via their
// run's driver.Host, and not through Complete directly: only then is the call
// journaled, replayable offline and never paid for twice on recovery.
func (c *Client) Device() driver.Device {
	return driver.DeviceFunc(func(ctx context.Context, op string, req json.RawMessage) (json.RawMessage, error) {
		if op != OpComplete {
			return nil, driver.Errorf(driver.CodeUnsupported, "llm has no operation %q (use %q)", op, OpComplete)
		}
		var r Request
		if len(bytes.TrimSpace(req)) == 0 {
			req = json.RawMessage("{}")
		}
		dec := json.NewDecoder(bytes.NewReader(req))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, driver.Errorf(driver.CodeInvalid, "llm.%s: bad request: %v", op, err)
		}
		resp, err := c.Complete(ctx, r)
		if err != nil {
			return nil, err
		}
		b, err := driver.Marshal(resp)
		if err != nil {
			return nil, driver.Errorf(driver.CodeIO, "llm.%s: encoding the response: %v", op, err)
		}
		return b, nil
	})
}
