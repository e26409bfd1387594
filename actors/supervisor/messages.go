package supervisor

import "github.com/asynkron/protoactor-go/actor"

// WhichChildren asks a supervisor for its live children. Sender: anyone, with
// RequestFuture. Reply: *Children. Local only (not protobuf).
type WhichChildren struct{}

// Children is the reply to WhichChildren: names and PIDs in start order.
type Children struct {
	Names []string
	PIDs  []*actor.PID
}
