// Package driver holds the devices through which a tool reaches the outside
// world, and the one interface every such call goes through.
//
// # The choke point
//
// A running tool has no access to anything but the tgp bridge. Every bridge
// call (tgp.read_file, tgp.write_file, tgp.list_files, later tgp.exec_sql and
// tgp.fetch) and the sources behind Math.random (a seed) and Date (the clock)
// become one Call, handed to one Host:
//
//	Host.Do(ctx, Call{Seq, Driver, Op, Request}) -> (response JSON, error)
//
// IMPORTANT: there is no second path. The journal records and replays runs by
// wrapping the Host with a Middleware; a device that a tool could reach
// without a Call would make runs unreplayable and is a bug.
//
// Seq numbers a run's calls 1, 2, 3, ... in the order the tool issued them,
// assigned by the sandbox on the tool's own goroutine, so the numbering is
// deterministic even when calls complete out of order.
//
// # Devices
//
// Mux routes a Call to the Device registered under its Driver name. This
// package provides the file device (FS, over a vfs.Sandbox), the clock
// (Clock) and the random seed (Random); later packages add sql and fetch.
package driver
