package capability

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
)

// A persisted account's spending outlives the program: a new account under
// the same key, over the same file reopened, starts with what was spent,
// and its limit holds across the restart (issue 10, item 9).
func TestLedgerKeepsSpendingAcrossRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quota.db")
	open := func() (*FileLedger, *Account, *Account) {
		l, err := OpenLedger(path)
		if err != nil {
			t.Fatal(err)
		}
		root := NewAccount("kernel", Limits{ToolCalls: 10})
		if err := root.Persist(l, "node"); err != nil {
			t.Fatal(err)
		}
		agent, err := root.Child("pid:1", Limits{ToolCalls: 3, MemoryMB: 100})
		if err != nil {
			t.Fatal(err)
		}
		if err := agent.Persist(l, "process:agent"); err != nil {
			t.Fatal(err)
		}
		return l, root, agent
	}
	l, root, agent := open()
	for range 2 {
		if err := agent.Charge(ToolCalls, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := agent.Charge(MemoryMB, 50); err != nil { // held, not spent: not kept
		t.Fatal(err)
	}
	if err := root.Charge(ToolCalls, 4); err != nil { // the node's own use
		t.Fatal(err)
	}
	l.Close()

	l, root, agent = open()
	defer l.Close()
	if agent.Used(ToolCalls) != 2 || root.Used(ToolCalls) != 6 || agent.Used(MemoryMB) != 0 {
		t.Fatalf("after the restart: agent %g tool calls, %g MB; node %g tool calls; want 2, 0, 6", agent.Used(ToolCalls), agent.Used(MemoryMB), root.Used(ToolCalls))
	}
	if err := agent.Charge(ToolCalls, 1); err != nil {
		t.Fatal(err)
	}
	var qe *QuotaError
	if err := agent.Charge(ToolCalls, 1); !errors.As(err, &qe) || qe.Key != "process:agent" {
		t.Fatalf("the 4th call of 3, across a restart: %v", err)
	}
	all, err := l.All()
	if err != nil || len(all) != 2 || all[0].Account != "node" || all[0].Spent[ToolCalls] != 7 || all[1].Spent[ToolCalls] != 3 {
		t.Fatalf("All = %+v %v", all, err)
	}
	if cleared, err := l.Reset("process:agent"); err != nil || len(cleared) != 1 {
		t.Fatalf("Reset: %v %v", cleared, err)
	}
	if spent, _ := l.Spent("process:agent"); spent[ToolCalls] != 0 {
		t.Fatalf("after Reset: %v", spent)
	}
	if _, err := l.Reset("process:nobody"); err == nil {
		t.Fatal("resetting an unknown account succeeded")
	}
}

// A charge the ledger cannot record is refused and given back: spending
// is never kept in memory only while a ledger is in use.
func TestLedgerFailureRefusesCharge(t *testing.T) {
	l, err := OpenLedger(filepath.Join(t.TempDir(), "quota.db"))
	if err != nil {
		t.Fatal(err)
	}
	a := NewAccount("kernel", Limits{ToolCalls: 10})
	if err := a.Persist(l, "node"); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := a.Charge(ToolCalls, 1); err == nil {
		t.Fatal("a charge a closed ledger could not record succeeded")
	}
	if a.Used(ToolCalls) != 0 {
		t.Fatalf("the refused charge stayed in memory: %g", a.Used(ToolCalls))
	}
	if err := a.Charge(Children, 1); err != nil { // not cumulative: no ledger involved
		t.Fatal(err)
	}
}

// A second process cannot open a held ledger: use is never counted by two
// programs at once.
func TestLedgerHeldOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quota.db")
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := OpenLedger(path); !errors.Is(err, ErrLedgerBusy) {
		t.Fatalf("a second open: %v, want ErrLedgerBusy", err)
	}
}

// Concurrent charges are all recorded, and the limit holds exactly.
func TestLedgerConcurrentCharges(t *testing.T) {
	l, err := OpenLedger(filepath.Join(t.TempDir(), "quota.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a := NewAccount("kernel", Limits{ToolCalls: 50})
	if err := a.Persist(l, "node"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if a.Charge(ToolCalls, 1) == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	spent, _ := l.Spent("node")
	if ok != 50 || spent[ToolCalls] != 50 || a.Used(ToolCalls) != 50 {
		t.Fatalf("%d charges accepted, %g recorded, %g in memory; want 50 each", ok, spent[ToolCalls], a.Used(ToolCalls))
	}
}
