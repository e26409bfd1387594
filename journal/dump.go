package journal

import (
	"fmt"
	"time"

	"github.com/agentos-run/agentos/driver"
)

// Dump is a whole run as JSON: its metadata, the tool's source and every
// entry. It is what `agentos trace --json` prints and what golden journals
// in testdata are made of.
type Dump struct {
	Run     RunMeta `json:"run"`
	Source  string  `json:"source,omitempty"`
	Entries []Entry `json:"entries"`
}

// Export returns run id as a Dump.
func (j *Journal) Export(id string) (Dump, error) {
	meta, err := j.Get(id)
	if err != nil {
		return Dump{}, err
	}
	entries, err := j.Entries(meta.ID)
	if err != nil {
		return Dump{}, err
	}
	// A claim is which node runs the run now, not part of its record.
	meta.Owner, meta.LeaseUntil = "", time.Time{}
	d := Dump{Run: meta, Entries: entries}
	if d.Entries == nil {
		d.Entries = []Entry{}
	}
	if src, err := j.Source(meta.Hash); err == nil {
		d.Source = string(src)
	}
	return d, nil
}

// Import writes a Dump into the journal (replacing a run with the same id).
func (j *Journal) Import(d Dump) error {
	if d.Run.ID == "" {
		return fmt.Errorf("importing a run: the dump has no run id")
	}
	j.raiseIDFloor(d.Run.ID) // an id uniqueID did not issue
	if d.Source != "" && d.Run.Hash != "" {
		if err := j.PutSource(d.Run.Hash, []byte(d.Source)); err != nil {
			return err
		}
	}
	// Replace the run: drop entries a previous run with this id had.
	if err := j.submit(&write{run: d.Run.ID, reset: true}, true); err != nil {
		return err
	}
	scope := &secretSet{}
	ck := &chunker{}
	for _, e := range d.Entries {
		// A dump is redacted like a live recording: whoever wrote it, no
		// credential reaches the file.
		e.Request = j.redact.jsonIn(e.Request, scope)
		if e.Sealed == "" {
			e.Response = j.redact.jsonIn(e.Response, scope)
		}
		if e.Error != nil {
			e.Error = &driver.Error{Code: e.Error.Code, Message: j.redact.textIn(e.Error.Message, scope)}
		}
		// One encoding for entries, whoever writes them: the recorder's.
		entry, blobs := j.encodeEntry(&e, ck)
		if err := j.submit(&write{run: d.Run.ID, seq: e.Seq, entry: entry, blobs: blobs}, false); err != nil {
			return err
		}
	}
	return j.putMeta(d.Run)
}
