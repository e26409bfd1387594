package supervisor

import (
	"reflect"
	"testing"
	"time"
)

// end is one child end fed to an Engine in a table test.
type end struct {
	child  int
	normal bool
	after  time.Duration // since the previous end
}

// TestEngineDecisions checks the engine alone: the children each strategy
// restarts or drops, the restart types, the intensity within the period,
// the backoff, and the Event of each decision.
func TestEngineDecisions(t *testing.T) {
	abc := []Child{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	withTemp := []Child{{Name: "a"}, {Name: "tmp", Restart: Temporary}, {Name: "c"}, {Name: "tr", Restart: Transient}}
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		policy   Policy
		children []Child
		ends     []end
		want     []Decision // one per end
	}{
		{
			name: "one_for_one restarts the failed child alone", policy: Policy{Strategy: OneForOne}, children: abc,
			ends: []end{{child: 1}},
			want: []Decision{{Action: ActionRestart, Restart: []int{1},
				Event: Event{Failed: "b", Reason: "r", Action: ActionRestart, Children: []string{"b"}, Restarts: 1}}},
		},
		{
			name: "one_for_all restarts every child in start order", policy: Policy{Strategy: OneForAll}, children: abc,
			ends: []end{{child: 1}},
			want: []Decision{{Action: ActionRestart, Restart: []int{0, 1, 2},
				Event: Event{Failed: "b", Reason: "r", Action: ActionRestart, Children: []string{"a", "b", "c"}, Restarts: 1}}},
		},
		{
			name: "rest_for_one restarts the failed child and those after it", policy: Policy{Strategy: RestForOne}, children: abc,
			ends: []end{{child: 1}},
			want: []Decision{{Action: ActionRestart, Restart: []int{1, 2},
				Event: Event{Failed: "b", Reason: "r", Action: ActionRestart, Children: []string{"b", "c"}, Restarts: 1}}},
		},
		{
			name: "a temporary child is stopped and counts no restart", policy: Policy{Strategy: OneForAll}, children: withTemp,
			ends: []end{{child: 1}, {child: 0}},
			want: []Decision{
				{Action: ActionStop, Event: Event{Failed: "tmp", Reason: "r", Action: ActionStop, Children: []string{"tmp"}}},
				// tmp is no longer running: it is neither stopped again nor restarted
				{Action: ActionRestart, Restart: []int{0, 2, 3},
					Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a", "c", "tr"}, Restarts: 1}},
			},
		},
		{
			name: "a running temporary sibling is stopped for good", policy: Policy{Strategy: RestForOne}, children: withTemp,
			ends: []end{{child: 0}, {child: 0}},
			want: []Decision{
				{Action: ActionRestart, Restart: []int{0, 2, 3}, Stop: []int{1},
					Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a", "c", "tr"}, Restarts: 1}},
				{Action: ActionRestart, Restart: []int{0, 2, 3},
					Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a", "c", "tr"}, Restarts: 2}},
			},
		},
		{
			name: "a transient child is restarted after a failure, not after a normal end", policy: Policy{Strategy: OneForOne}, children: withTemp,
			ends: []end{{child: 3}, {child: 3, normal: true}},
			want: []Decision{
				{Action: ActionRestart, Restart: []int{3},
					Event: Event{Failed: "tr", Reason: "r", Action: ActionRestart, Children: []string{"tr"}, Restarts: 1}},
				{Action: ActionStop, Event: Event{Failed: "tr", Reason: "r", Action: ActionStop, Children: []string{"tr"}}},
			},
		},
		{
			name: "a permanent child is restarted after a normal end", policy: Policy{Strategy: OneForOne}, children: abc,
			ends: []end{{child: 2, normal: true}},
			want: []Decision{{Action: ActionRestart, Restart: []int{2},
				Event: Event{Failed: "c", Reason: "r", Action: ActionRestart, Children: []string{"c"}, Restarts: 1}}},
		},
		{
			name: "a group restart starts a transient sibling that ended normally", policy: Policy{Strategy: OneForAll}, children: withTemp,
			ends: []end{{child: 3, normal: true}, {child: 2}},
			want: []Decision{
				{Action: ActionStop, Event: Event{Failed: "tr", Reason: "r", Action: ActionStop, Children: []string{"tr"}}},
				{Action: ActionRestart, Restart: []int{0, 2, 3}, Stop: []int{1},
					Event: Event{Failed: "c", Reason: "r", Action: ActionRestart, Children: []string{"a", "c", "tr"}, Restarts: 1}},
			},
		},
		{
			name: "one restart more than the intensity escalates, and the window starts afresh", policy: Policy{Intensity: 2, Period: time.Minute}, children: abc,
			ends: []end{{child: 0}, {child: 1}, {child: 2}, {child: 0}},
			want: []Decision{
				{Action: ActionRestart, Restart: []int{0}, Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a"}, Restarts: 1}},
				{Action: ActionRestart, Restart: []int{1}, Event: Event{Failed: "b", Reason: "r", Action: ActionRestart, Children: []string{"b"}, Restarts: 2}},
				{Action: ActionEscalate, Event: Event{Failed: "c", Reason: "r", Action: ActionEscalate, Restarts: 3}},
				{Action: ActionRestart, Restart: []int{0}, Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a"}, Restarts: 1}},
			},
		},
		{
			name: "restarts older than the period are forgotten", policy: Policy{Intensity: 2, Period: 10 * ms}, children: abc,
			ends: []end{{child: 0}, {child: 0, after: 5 * ms}, {child: 0, after: 6 * ms}, {child: 0, after: 11 * ms}},
			want: []Decision{
				{Action: ActionRestart, Restart: []int{0}, Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a"}, Restarts: 1}},
				{Action: ActionRestart, Restart: []int{0}, Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a"}, Restarts: 2}},
				{Action: ActionRestart, Restart: []int{0}, Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a"}, Restarts: 2}},
				{Action: ActionRestart, Restart: []int{0}, Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a"}, Restarts: 1}},
			},
		},
		{
			name: "the default intensity is 3 in 5 s", policy: Policy{}, children: abc,
			ends: []end{{child: 0}, {child: 0}, {child: 0}, {child: 0, after: 4 * time.Second}},
			want: []Decision{
				{Action: ActionRestart, Restart: []int{0}, Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a"}, Restarts: 1}},
				{Action: ActionRestart, Restart: []int{0}, Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a"}, Restarts: 2}},
				{Action: ActionRestart, Restart: []int{0}, Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a"}, Restarts: 3}},
				{Action: ActionEscalate, Event: Event{Failed: "a", Reason: "r", Action: ActionEscalate, Restarts: 4}},
			},
		},
		{
			name: "backoff doubles per restart within the period, capped", children: abc,
			policy: Policy{Intensity: 10, Period: time.Minute, Backoff: Backoff{Initial: ms, Max: 3 * ms}},
			ends:   []end{{child: 0}, {child: 1}, {child: 0}},
			want: []Decision{
				{Action: ActionRestart, Restart: []int{0}, Delay: ms, Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a"}, Restarts: 1, Delay: ms}},
				{Action: ActionRestart, Restart: []int{1}, Delay: 2 * ms, Event: Event{Failed: "b", Reason: "r", Action: ActionRestart, Children: []string{"b"}, Restarts: 2, Delay: 2 * ms}},
				{Action: ActionRestart, Restart: []int{0}, Delay: 3 * ms, Event: Event{Failed: "a", Reason: "r", Action: ActionRestart, Children: []string{"a"}, Restarts: 3, Delay: 3 * ms}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine(tc.policy, tc.children)
			now := time.Unix(1e9, 0)
			for k, en := range tc.ends {
				now = now.Add(en.after)
				got := e.Ended(en.child, "r", en.normal, now)
				if !reflect.DeepEqual(got, tc.want[k]) {
					t.Fatalf("end %d (child %d):\n got %+v\nwant %+v", k, en.child, got, tc.want[k])
				}
			}
		})
	}
}

// The engine tracks which children run: an end marks the child stopped,
// a restart marks its group running, a dropped temporary sibling stays
// stopped; Remove shifts the later children down; Reset starts afresh.
func TestEngineChildren(t *testing.T) {
	e := NewEngine(Policy{Strategy: OneForAll, Intensity: 1, Period: time.Minute},
		[]Child{{Name: "a"}, {Name: "tmp", Restart: Temporary}, {Name: "c"}})
	if p := e.Policy(); p.Intensity != 1 || p.Period != time.Minute || p.Strategy != OneForAll {
		t.Fatalf("policy %+v", p)
	}
	running := func() []bool {
		var out []bool
		for i := 0; i < e.Len(); i++ {
			out = append(out, e.Running(i))
		}
		return out
	}
	if got := running(); !reflect.DeepEqual(got, []bool{true, true, true}) {
		t.Fatalf("at start, running %v", got)
	}
	e.Ended(2, "r", false, time.Now())
	if got := running(); !reflect.DeepEqual(got, []bool{true, false, true}) {
		t.Fatalf("after a one_for_all restart, running %v, want the temporary child stopped", got)
	}
	e.Remove(1)
	if e.Len() != 2 || e.Child(1).Name != "c" || !e.Running(1) {
		t.Fatalf("after Remove(1): %d children, child 1 %+v", e.Len(), e.Child(1))
	}
	if d := e.Ended(1, "r", false, time.Now()); d.Action != ActionEscalate {
		t.Fatalf("second restart with intensity 1: %+v", d)
	}
	if e.Running(1) {
		t.Fatal("an escalated child still counts as running")
	}
	e.Reset([]Child{{Name: "x"}})
	if e.Len() != 1 || !e.Running(0) {
		t.Fatalf("after Reset: %d children", e.Len())
	}
	if d := e.Ended(0, "r", false, time.Now()); d.Action != ActionRestart || d.Event.Restarts != 1 {
		t.Fatalf("Reset kept the restart window: %+v", d)
	}
}

// BenchmarkEngineRestart measures one decision alone: a one_for_one
// restart of one child out of three, the window at a steady size (the
// shape of BenchmarkRestarts in both supervisors, without the actors or
// processes). It is the engine's share of each restart they measure.
//
//	go test -run '^$' -bench EngineRestart ./actors/supervisor/
func BenchmarkEngineRestart(b *testing.B) {
	e := NewEngine(Policy{Strategy: OneForOne, Intensity: 1 << 30, Period: time.Microsecond},
		[]Child{{Name: "a"}, {Name: "b"}, {Name: "c"}})
	now := time.Unix(1e9, 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now = now.Add(time.Microsecond)
		if d := e.Ended(i%3, "fail", false, now); d.Action != ActionRestart {
			b.Fatalf("decision %+v", d)
		}
	}
}
