package loopport

import (
	"net"
	"strconv"
	"testing"
)

// The ports are distinct, free, and (on Linux) below the ephemeral range,
// where a concurrent listener on port 0 or an outgoing connection cannot
// take one before its server binds it.
func TestReserveAvoidsTheEphemeralRange(t *testing.T) {
	ports, err := Reserve(3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 3 {
		t.Fatalf("Reserve(3) = %v", ports)
	}
	seen := map[int]bool{}
	floor := EphemeralFloor()
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d picked twice: %v", p, ports)
		}
		seen[p] = true
		if floor > 2048 && (p >= floor || p <= 1024) {
			t.Errorf("port %d is not below the ephemeral range (from %d)", p, floor)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d is not free for its server: %v", p, err)
			continue
		}
		l.Close()
	}
	if floor == 0 {
		t.Log("no ephemeral range known here: the kernel picked the ports")
	}
}

// A port held by a listener is never handed out: the draw skips it.
func TestReserveSkipsAPortInUse(t *testing.T) {
	held, err := Reserve(1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(held[0])))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 50 {
		ports, err := Reserve(4)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if p == held[0] {
				t.Fatalf("Reserve handed out port %d, which a listener holds", p)
			}
		}
	}
}
