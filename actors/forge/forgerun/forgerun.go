package forgerun

import (
	"encoding/json"

	"github.com/agentos-run/agentos/journal"
)

// Kind is the journal kind of forge runs (RunMeta.Kind).
const Kind = "forge"

// Args are a forge run's recorded arguments (RunMeta.Args).
type Args struct {
	// Spec is what the tool must do, as the caller asked (REQUIRED).
	Spec string
	// Request is the key of the request that caused the run (the forge
	// grain's caller's RunKey); "" when unknown: a run recorded before
	// agentos kept it, or forged without a key.
	Request string
	// Lessons says the forge asked for lessons, from the memories of
	// LessonAgents. A run recorded before the agents were kept has Lessons
	// and no LessonAgents; Encode writes LessonAgents only with Lessons.
	Lessons      bool
	LessonAgents []string
}

// record is Args as the journal holds them.
type record struct {
	Spec         string   `json:"spec"`
	Request      string   `json:"request"`
	Lessons      string   `json:"lessons"` // "1" when asked
	LessonAgents []string `json:"lesson_agents"`
}

// Encode returns a as a forge run's RunMeta.Args: {"spec": ...}, with
// "request" when set, and "lessons": "1" and "lesson_agents" when Lessons.
func (a Args) Encode() json.RawMessage {
	m := map[string]any{"spec": a.Spec}
	if a.Request != "" {
		m["request"] = a.Request
	}
	if a.Lessons {
		m["lessons"] = "1"
		m["lesson_agents"] = a.LessonAgents
	}
	b, _ := json.Marshal(m) // strings and a string slice cannot fail to marshal
	return b
}

// ArgsOf returns the arguments forge run m was journaled with; ok false for
// a run of another kind, or whose arguments are not a forge's.
func ArgsOf(m journal.RunMeta) (a Args, ok bool) {
	var r record
	if m.Kind != Kind || json.Unmarshal(m.Args, &r) != nil {
		return Args{}, false
	}
	return Args{Spec: r.Spec, Request: r.Request, Lessons: r.Lessons == "1", LessonAgents: r.LessonAgents}, true
}

// SpecOf returns the spec a forge run was journaled with; ok false for a
// run of another kind or without one.
func SpecOf(m journal.RunMeta) (spec string, ok bool) {
	a, ok := ArgsOf(m)
	return a.Spec, ok && a.Spec != ""
}

// RequestOf returns the key of the request that caused forge run m (see
// Args.Request); "" for a run of another kind, or when unknown.
func RequestOf(m journal.RunMeta) string {
	a, _ := ArgsOf(m)
	return a.Request
}
