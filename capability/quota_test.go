package capability

import (
	"errors"
	"sync"
	"testing"
)

func TestChargeIsAllOrNothingUpTheTree(t *testing.T) {
	// Children counts every descendant up the tree: agent, sub and sibling.
	root := NewAccount("node", Limits{LLMTokens: 1000, Children: 3})
	agent, err := root.Child("agent", Limits{LLMTokens: 800})
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := agent.Child("sub", Limits{LLMTokens: 500})
	if err := sub.Charge(LLMTokens, 400); err != nil {
		t.Fatal(err)
	}
	if root.Used(LLMTokens) != 400 || agent.Used(LLMTokens) != 400 {
		t.Fatal("a charge was not applied to every ancestor")
	}
	// sub has room for 100, agent for 400: 300 fails at sub, nothing is charged.
	err = sub.Charge(LLMTokens, 300)
	var qe *QuotaError
	if !errors.As(err, &qe) || qe.Account != "sub" || qe.Reason() != "quota:llm_tokens" {
		t.Fatalf("got %v", err)
	}
	if root.Used(LLMTokens) != 400 || agent.Used(LLMTokens) != 400 || sub.Used(LLMTokens) != 400 {
		t.Fatal("a refused charge left something charged")
	}
	sibling, err := root.Child("sibling", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Child("fourth", nil); !errors.As(err, &qe) || qe.Meter != Children {
		t.Fatalf("a fourth descendant got a slot: %v", err)
	}
	if err := sibling.Charge(LLMTokens, 700); !errors.As(err, &qe) || qe.Account != "node" {
		t.Fatalf("the root's limit must bind a sibling: %v", err)
	}
	if err := sibling.Charge(LLMTokens, 600); err != nil {
		t.Fatalf("siblings keep running: %v", err)
	}
	if left, ok := sub.Left(LLMTokens); !ok || left != 0 {
		t.Fatalf("left %v %v, want 0 (the root is full)", left, ok)
	}
}

func TestChildrenSlots(t *testing.T) {
	root := NewAccount("node", Limits{Children: 1})
	a, err := root.Child("a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Child("b", nil); err == nil {
		t.Fatal("a second child got a slot")
	}
	a.Close()
	a.Close()
	if _, err := root.Child("b", nil); err != nil {
		t.Fatalf("a closed child did not free its slot: %v", err)
	}
}

func TestRefundsNeverFail(t *testing.T) {
	root := NewAccount("node", Limits{CostUSD: 1})
	root.Refund(CostUSD, 5)
	if root.Used(CostUSD) != 0 {
		t.Fatal("refund went below zero")
	}
	if err := root.Charge(CostUSD, -1); err == nil {
		t.Fatal("a negative charge was accepted")
	}
}

func TestConcurrentChargesNeverExceedTheLimit(t *testing.T) {
	root := NewAccount("node", Limits{ToolCalls: 100})
	kids := []*Account{}
	for range 4 {
		k, _ := root.Child("k", nil)
		kids = append(kids, k)
	}
	var ok sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for _, k := range kids {
		for range 50 {
			ok.Go(func() {
				if k.Charge(ToolCalls, 1) == nil {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			})
		}
	}
	ok.Wait()
	if granted != 100 || root.Used(ToolCalls) != 100 {
		t.Fatalf("granted %d, used %g; want exactly 100", granted, root.Used(ToolCalls))
	}
}
