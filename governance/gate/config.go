package gate

import (
	"fmt"
	"time"

	"github.com/agentos-run/agentos/config"
)

// Config is agentos.json's governance.gate, the registration gate. The zero value replays the
// 5 most recent runs of the previous version and warns (the write lands
// with the report).
type Config struct {
	// Runs is how many of the previous version's most recent recorded runs
	// are replayed against the new version. Default 5; 0 disables the gate.
	Runs *int `json:"runs,omitempty"`
	// Policy is "warn" (default: the write lands, the report goes with the
	// reply) or "block" (a write whose gate finds a run with a different
	// result or a divergence is refused: nothing is written, registered or
	// committed).
	Policy string `json:"policy,omitempty"`
	// BlockOnError, with policy "block", also refuses a write when a run
	// could not be judged (the replay failed or stopped at a limit, as a
	// version that loops does). Default (absent): true with policy
	// "block", so that a timeout does not let a change through unjudged;
	// false explicitly reports such runs without refusing the write.
	// Ignored with policy "warn".
	BlockOnError *bool `json:"block_on_error,omitempty"`
	// Timeout caps one replay's timeout (its recorded one when shorter).
	// Default "10s".
	Timeout config.Duration `json:"timeout,omitzero"`
}

// Options is the Options this configuration stands for (Runs 0 is the
// gate's "disabled", -1).
func (g Config) Options() Options {
	o := Options{Policy: Policy(g.Policy), Timeout: time.Duration(g.Timeout)}
	if g.BlockOnError != nil {
		b := *g.BlockOnError
		o.BlockOnError = &b
	}
	if g.Runs != nil {
		o.Runs = *g.Runs
		if o.Runs == 0 {
			o.Runs = -1
		}
	}
	return o
}

// Validate checks the section, naming the key that is wrong.
func (g Config) Validate() error {
	if g.Runs != nil && *g.Runs < 0 {
		return fmt.Errorf("governance.gate.runs %d must be 0 (no gate) or more (default %d)", *g.Runs, DefaultRuns)
	}
	switch g.Policy {
	case "", string(PolicyWarn), string(PolicyBlock):
	default:
		return fmt.Errorf("governance.gate.policy %q is not known: use \"warn\" (the write lands with the report) or \"block\" (a changed run refuses it)", g.Policy)
	}
	if g.Timeout < 0 {
		return fmt.Errorf("governance.gate.timeout must be positive")
	}
	return nil
}
