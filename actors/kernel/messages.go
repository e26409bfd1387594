package kernel

// The kernel actor's messages are protobuf messages, defined (and each
// documented: who sends it, the reply) in kernelpb/kernel.proto:
//
//	PS → PSReply                 the process table
//	EventsQuery → EventsReply    recent kernel events
//	Signal → SignalReply         kill, term, stop, cont
//	Spawn → Spawned              start a registered image (RegisterImage)
//	Send → Sent                  a JSON message to a process (by pid or name)
//	Monitor → Monitored          the watcher receives a Down when the process ends
//	Demonitor → Demonitored      no Down after the reply
//	Charge → Charged             charge a process's quota (quota refusal as data)
//	Refund → Refunded            give back what was charged
//	Refused (note, no reply)     an executor's refused capability check
//	Snapshot → SnapshotTaken     seal a process's state into the journal (optionally killing it)
//	Restore → Restored           start a snapshot again (by id, or its sealed bytes)
//
// Callers use the kernel client (actors/kernel/client), which converts them to and from the
// kernel's domain types. The embedding program may still call the Kernel's
// methods directly; actors and other nodes MUST go through the messages.

// exited is the kernel actor's note to itself that a monitored process
// ended (its context's AfterFunc sends it): the Down goes out from the
// actor's own goroutine, so a Demonitor handled first suppresses it. It
// never leaves the process.
type exited struct {
	pid PID
	key watchKey
}
