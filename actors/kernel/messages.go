package kernel

// The kernel actor's messages: how other actors (and, later, other nodes)
// reach the process table. The embedding program calls the Kernel's methods
// directly.

// PS asks for the process table. Sender: anyone, with RequestFuture.
// Reply: *PSReply.
type PS struct{}

// PSReply is the reply to PS.
type PSReply struct{ Procs []ProcInfo }

// EventsQuery asks for recent kernel events with Seq > After, at most Limit
// (0: all kept). Sender: anyone, with RequestFuture. Reply: *EventsReply.
type EventsQuery struct {
	After uint64
	Limit int
}

// EventsReply is the reply to EventsQuery.
type EventsReply struct{ Events []Event }

// Signal asks the kernel to signal a process: "kill", "term", "stop" or
// "cont". Sender: anyone, with RequestFuture. Reply: *SignalReply.
type Signal struct {
	PID PID
	Sig string
	// By names who asked (logged with the kill).
	By string
}

// SignalReply is the reply to Signal; Err is nil on success.
type SignalReply struct{ Err error }
