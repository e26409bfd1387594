package bench_test

import (
	"context"
	"testing"

	"github.com/agentos-run/agentos/internal/host"
	"github.com/agentos-run/agentos/tests/internal/scenario"
)

// BenchmarkTournament: a tournament of 3 variants over 5 tasks (23 model
// calls) against the scripted model on loopback, live (each call over
// HTTP and committed to the journal before it is used) and replayed (every
// answer from the journal, no request). ns/op is one whole tournament.
func BenchmarkTournament(b *testing.B) {
	srv := scenario.TournamentModel(nil)
	defer srv.Close()
	cfg := host.Config{Root: b.TempDir(), Isolation: "inprocess", LLM: host.LLMConfig{BaseURL: srv.URL(), Model: "scripted"}}
	cfg.Logger = scenario.Quiet
	rt, err := host.Start(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	if _, err := rt.SavePersona(context.Background(), scenario.BasePersona); err != nil {
		b.Fatal(err)
	}
	var run string
	b.Run("live", func(b *testing.B) {
		for b.Loop() {
			rep, err := rt.Tournament(context.Background(), host.TournamentOptions{Persona: "quiz", Tasks: scenario.TournamentTasks, Variants: 3, DryRun: true})
			if err != nil || rep.Winner != "v2" {
				b.Fatal(err, rep.Winner)
			}
			run = rep.Run
		}
	})
	b.Run("replay", func(b *testing.B) {
		before := srv.Requests()
		for b.Loop() {
			rep, err := rt.ReplayTournament(context.Background(), run)
			if err != nil || rep.Winner != "v2" {
				b.Fatal(err, rep.Winner)
			}
		}
		if srv.Requests() != before {
			b.Fatalf("the replays sent %d requests", srv.Requests()-before)
		}
	})
}
