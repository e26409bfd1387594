// Package loopport picks free loopback ports for servers that another
// process (or a later step) binds: a cluster's nodes, whose seed list must
// name every node's port before any node starts.
package loopport

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Reserve returns n distinct loopback ports that were free when it
// returned; the caller's servers bind them a moment later.
//
// IMPORTANT: the ports are drawn below the kernel's ephemeral port range,
// where neither a listener asking for port 0 nor an outgoing connection is
// given one in the meantime. A port from that range (what listening on
// port 0 returns) could be taken before its server bound it on a busy
// machine (CI runs packages side by side): a node then failed to start, and
// its cluster stayed a member short. Where the range is unknown (not Linux)
// or starts too low to leave room, the kernel picks (port 0).
func Reserve(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	floor := EphemeralFloor()
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

// EphemeralFloor is the first port of the kernel's ephemeral range (Linux:
// net.ipv4.ip_local_port_range), 0 when unknown.
func EphemeralFloor() int {
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
