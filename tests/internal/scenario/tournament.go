package scenario

import (
	"fmt"
	"strings"
	"sync"

	"github.com/agentos-run/agentos/driver/llm/llmtest"
	"github.com/agentos-run/agentos/persona"
)

// TournamentTasks are five tasks scored by "contains"; the scripted model
// answers a task right when its system prompt is good enough for it (see
// TournamentModel).
var TournamentTasks = persona.TaskSet{
	Scorer: persona.Scorer{Kind: persona.ScoreContains, IgnoreCase: true},
	Tasks: []persona.Task{
		{ID: "t1", Input: "Capital of France?", Expected: "Paris"},
		{ID: "t2", Input: "2+3?", Expected: "5"},
		{ID: "t3", Input: "Colour of the sky?", Expected: "blue"},
		{ID: "t4", Input: "Opposite of hot?", Expected: "cold"},
		{ID: "t5", Input: "First letter of the alphabet?", Expected: "a"},
	},
}

var tournamentAnswers = map[string]string{"Capital of France?": "Paris", "2+3?": "5", "Colour of the sky?": "Blue", "Opposite of hot?": "Cold", "First letter of the alphabet?": "A"}

// TournamentModel answers the variant writing with "PROMPT-V<i>" and
// scores prompts by how many tasks they get right: the baseline 2, v1 3,
// v2 5 (the winner), v3 4. A wrong answer is "I don't know" (which no
// scorer takes for a right one). onRequest, when
// set, is told each request's number first.
func TournamentModel(onRequest func(n int)) *llmtest.Server {
	var mu sync.Mutex
	n := 0
	return llmtest.NewResponder(func(r llmtest.Received) llmtest.Step {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		if onRequest != nil {
			onRequest(k)
		}
		return TournamentStep(r)
	})
}

// TournamentStep is the scripted model's answer to r.
func TournamentStep(r llmtest.Received) llmtest.Step {
	right := map[string]int{"You answer questions.": 2, "PROMPT-V1": 3, "PROMPT-V2": 5, "PROMPT-V3": 4}
	order := []string{"Capital of France?", "2+3?", "Colour of the sky?", "Opposite of hot?", "First letter of the alphabet?"}
	sys, user := r.Messages[0].Content, r.Messages[len(r.Messages)-1].Content
	if strings.Contains(sys, "prompt engineer") {
		for i := 1; i <= 3; i++ {
			if strings.Contains(user, fmt.Sprintf("Write variant %d of 3.", i)) {
				return llmtest.Step{Content: fmt.Sprintf("PROMPT-V%d", i)}
			}
		}
		return llmtest.Step{Content: "unexpected variant request"}
	}
	for i, q := range order {
		if q == user && i < right[sys] {
			return llmtest.Step{Content: tournamentAnswers[q]}
		}
	}
	return llmtest.Step{Content: "I don't know"}
}

// BasePersona is the persona the tournaments improve: its prompt gets 2
// of TournamentTasks right.
var BasePersona = persona.Persona{Name: "quiz", Description: "answers quiz questions", System: "You answer questions."}
