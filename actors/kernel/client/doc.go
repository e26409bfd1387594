// Package client is the typed client of the kernel actor (actors/kernel):
// the requests a caller sends it (PS, Events, Signal, Spawn, Send,
// Monitor, Charge, Refund, Refused, Snapshot, Restore, Fork), the domain
// types they carry (PID, ProcInfo, Status, Event, EventKind, SpawnRequest,
// SnapshotInfo) and the kernel's errors, which a reply's Failure maps back
// to (errors.Is with ErrNoProcess, ErrExited, ErrNameTaken, ErrClosed,
// ErrInvalid, ErrNotRestorable, capability.ErrDenied; errors.As with
// *capability.QuotaError). Callers use it, never the raw messages
// (kernelpb).
//
// IMPORTANT: this package holds no actor and imports no actor package but
// the kernel's messages: any package may import it to reach the kernel
// actor (internal/archcheck's rule); only the composition root constructs
// the kernel itself (package kernel, which declares these types as aliases
// of this package's, so kernel.PID and client.PID are one type and the
// errors are the same values).
//
// # Protocol
//
//	PS{}                                    -> PSReply{procs | failure}
//	EventsQuery{after, limit}               -> EventsReply{events | failure}
//	Signal{pid, signal, by}                 -> SignalReply{failure}
//	Spawn{image, name, grants, quota, ...}  -> Spawned{pid | failure}
//	Send{pid | name, body}                  -> Sent{pid | failure}
//	Monitor / Demonitor{pid, watcher}       -> Monitored / Demonitored{failure}; Down{pid, reason} later
//	Charge / Refund{pid, meter, amount}     -> Charged / Refunded{failure}
//	Refused{pid, right, resource, reason}   (a note: no reply)
//	Snapshot{pid | name, kill, by}          -> SnapshotTaken{id, pid, ... | failure}
//	Restore{id | snapshot, name, fork}      -> Restored{pid, name | failure}
//
// # Failure
//
// A request the actor does not answer in time fails with the wait's error
// (system.Ask); an unexpected reply names the type it got. A refusal
// crosses as a kernelpb.Failure and comes back as a RemoteError wrapping
// the sentinel its code names.
package client
