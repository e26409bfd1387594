package main

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// demoPorts picks n free loopback ports for nodes started next, which bind
// them a moment later (each is a seed the others must know beforehand).
//
// IMPORTANT: they are drawn below the kernel's ephemeral port range, where
// neither a listener asking for port 0 nor an outgoing connection is given
// one in the meantime. A port from that range (what listening on port 0
// returns) could be taken before its node bound it on a busy machine: the
// node then failed to start, and its cluster stayed a member short. Where
// the range is unknown (not Linux) or starts too low to leave room, the
// kernel picks (port 0).
func demoPorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	floor := ephemeralFloor()
	for tries := 0; len(ports) < n && floor > 2048 && tries < 64*n; tries++ {
		p := floor - 1 - rand.IntN(min(floor-1025, 8192))
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // taken (or a port picked already: still listened on)
		}
		ls = append(ls, l)
		ports = append(ports, p)
	}
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ephemeralFloor is the first port of the kernel's ephemeral range (Linux:
// net.ipv4.ip_local_port_range), 0 when unknown.
func ephemeralFloor() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return lo
}
