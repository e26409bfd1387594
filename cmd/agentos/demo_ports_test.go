package main

import (
	"net"
	"strconv"
	"testing"
)

// The nodes' ports are distinct, free, and (on Linux) below the ephemeral
// range, where a concurrent listener on port 0 or an outgoing connection
// cannot take one before its node binds it.
func TestDemoPortsAvoidTheEphemeralRange(t *testing.T) {
	ports, err := demoPorts(3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	floor := ephemeralFloor()
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
			t.Errorf("port %d is not free for its node: %v", p, err)
			continue
		}
		l.Close()
	}
	if floor == 0 {
		t.Log("no ephemeral range known here: the kernel picked the ports")
	}
}
