package persona

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The scorer kinds.
const (
	// ScoreExact: 1 when the answer, trimmed, equals Expected, else 0.
	ScoreExact = "exact"
	// ScoreContains: 1 when the answer contains Expected, else 0.
	ScoreContains = "contains"
	// ScoreRegex: 1 when the Go regular expression Expected matches the
	// answer, else 0.
	ScoreRegex = "regex"
	// ScoreTool: a tool of the tool root scores: it is run (exec_tool)
	// with {"input", "expected", "answer"} and returns a number between 0
	// and 1, or an object with such a "score".
	ScoreTool = "tool"
)

// ErrInvalidTasks is the error of a malformed task set.
var ErrInvalidTasks = errors.New("invalid task set")

var scorerKinds = []string{ScoreExact, ScoreContains, ScoreRegex, ScoreTool}

// Scorer says how an answer to a task is scored, between 0 and 1.
type Scorer struct {
	// Kind is exact, contains, regex or tool.
	Kind string `json:"kind"`
	// IgnoreCase compares without case (exact, contains; regex: (?i)).
	IgnoreCase bool `json:"ignore_case,omitempty"`
	// Tool is the scoring tool's path, e.g. "tools/score/json_equal.ts"
	// (kind tool only).
	Tool string `json:"tool,omitempty"`
}

// Task is one task of a task set.
type Task struct {
	// ID names the task in the report (default: its 1-based index).
	ID string `json:"id,omitempty"`
	// Input is what the model is asked (the user message).
	Input string `json:"input"`
	// Expected is what the scorer compares the answer with.
	Expected string `json:"expected"`
	// Scorer, when set, scores this task instead of the set's.
	Scorer *Scorer `json:"scorer,omitempty"`
}

// TaskSet is what a tournament evaluates prompts on: a file such as
//
//	{
//	  "scorer": {"kind": "contains", "ignore_case": true},
//	  "tasks": [
//	    {"id": "fr", "input": "Capital of France? One word.", "expected": "Paris"},
//	    {"id": "sum", "input": "2+3? Digits only.", "expected": "^5$", "scorer": {"kind": "regex"}}
//	  ]
//	}
type TaskSet struct {
	// Scorer scores every task that has none of its own.
	Scorer Scorer `json:"scorer"`
	// Tasks are the tasks, at least one.
	Tasks []Task `json:"tasks"`
}

// ParseTasks reads a task set (see TaskSet) and checks it: unknown keys,
// no tasks, an empty input, an unknown scorer kind or a regular expression
// that does not compile are errors naming the task. file names the file
// in errors.
func ParseTasks(file string, b []byte) (TaskSet, error) {
	var ts TaskSet
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&ts); err != nil {
		return ts, fmt.Errorf("%w: %s: %v (the format: {\"scorer\": {\"kind\": \"exact|contains|regex|tool\"}, \"tasks\": [{\"id\", \"input\", \"expected\"}]})", ErrInvalidTasks, file, err)
	}
	return ts, ts.Validate(file)
}

// Validate checks the task set (see ParseTasks).
func (ts TaskSet) Validate(file string) error {
	if len(ts.Tasks) == 0 {
		return fmt.Errorf("%w: %s: no tasks: a tournament needs at least one task to score prompts on", ErrInvalidTasks, file)
	}
	ids := map[string]bool{}
	for i, t := range ts.Tasks {
		id := ts.taskID(i)
		if ids[id] {
			return fmt.Errorf("%w: %s: two tasks have the id %q: ids name the rows of the report", ErrInvalidTasks, file, id)
		}
		ids[id] = true
		if strings.TrimSpace(t.Input) == "" {
			return fmt.Errorf("%w: %s: task %s has no input", ErrInvalidTasks, file, id)
		}
		s := ts.scorer(i)
		if err := s.validate(t.Expected); err != nil {
			return fmt.Errorf("%w: %s: task %s: %v", ErrInvalidTasks, file, id, err)
		}
	}
	return nil
}

func (ts TaskSet) taskID(i int) string {
	if ts.Tasks[i].ID != "" {
		return ts.Tasks[i].ID
	}
	return fmt.Sprint(i + 1)
}

func (ts TaskSet) scorer(i int) Scorer {
	if s := ts.Tasks[i].Scorer; s != nil {
		return *s
	}
	return ts.Scorer
}

func (s Scorer) validate(expected string) error {
	switch s.Kind {
	case ScoreExact, ScoreContains:
		if expected == "" {
			return fmt.Errorf("scorer %s needs an expected answer", s.Kind)
		}
	case ScoreRegex:
		if _, err := s.regexp(expected); err != nil {
			return fmt.Errorf("expected %q is not a Go regular expression: %v", expected, err)
		}
	case ScoreTool:
		if s.Tool == "" {
			return errors.New("scorer tool needs the scoring tool's path in \"tool\", e.g. \"tools/score/judge.ts\"")
		}
	case "":
		return fmt.Errorf("no scorer: set the task set's \"scorer\": {\"kind\": ...} to one of %s", strings.Join(scorerKinds, ", "))
	default:
		return fmt.Errorf("unknown scorer kind %q: use one of %s", s.Kind, strings.Join(scorerKinds, ", "))
	}
	return nil
}

func (s Scorer) regexp(expected string) (*regexp.Regexp, error) {
	if s.IgnoreCase {
		expected = "(?i)" + expected
	}
	return regexp.Compile(expected)
}

// ToolScorer runs a scoring tool (kind tool) with args and returns its
// result.
type ToolScorer func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error)

// score scores answer to task i.
func (ts TaskSet) score(ctx context.Context, i int, answer string, tool ToolScorer) (float64, error) {
	t, s := ts.Tasks[i], ts.scorer(i)
	a, e := strings.TrimSpace(answer), strings.TrimSpace(t.Expected)
	if s.IgnoreCase && s.Kind != ScoreRegex {
		a, e = strings.ToLower(a), strings.ToLower(e)
	}
	switch s.Kind {
	case ScoreExact:
		return b2f(a == e), nil
	case ScoreContains:
		return b2f(strings.Contains(a, e)), nil
	case ScoreRegex:
		re, err := s.regexp(t.Expected)
		if err != nil {
			return 0, err
		}
		return b2f(re.MatchString(answer)), nil
	case ScoreTool:
		if tool == nil {
			return 0, errors.New("scorer tool: no tool runner was given (Options.ScoreTool)")
		}
		args, _ := json.Marshal(map[string]string{"input": t.Input, "expected": t.Expected, "answer": answer})
		out, err := tool(ctx, s.Tool, args)
		if err != nil {
			return 0, fmt.Errorf("scoring tool %s: %w", s.Tool, err)
		}
		return toolScore(s.Tool, out)
	}
	return 0, fmt.Errorf("unknown scorer kind %q", s.Kind)
}

// toolScore reads a scoring tool's result: a number, or {"score": n}
// (exec_tool's {"result": ...} envelope is looked through).
func toolScore(tool string, out json.RawMessage) (float64, error) {
	var env struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(out, &env) == nil && len(env.Result) > 0 {
		out = env.Result
	}
	var n float64
	if err := json.Unmarshal(out, &n); err != nil {
		var obj struct {
			Score *float64 `json:"score"`
		}
		if json.Unmarshal(out, &obj) != nil || obj.Score == nil {
			return 0, fmt.Errorf("scoring tool %s returned %.200s: it must return a number between 0 and 1, or {\"score\": n}", tool, out)
		}
		n = *obj.Score
	}
	if n < 0 || n > 1 {
		return 0, fmt.Errorf("scoring tool %s returned the score %g: it must be between 0 and 1", tool, n)
	}
	return n, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
