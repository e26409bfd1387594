package executor

import (
	"encoding/json"
	"time"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	pb "github.com/agentos-run/agentos/actors/executor/executorpb"
)

// The client's conversions (actors/executor/client), for the tests that
// send the actor raw messages.

func callerToPB(c *execclient.Caller) *pb.Caller {
	if c == nil {
		return nil
	}
	return &pb.Caller{Pid: c.PID, Name: c.Name, Holder: c.Holder, Token: c.Token.Encode(), Home: c.Home}
}

func resultOf(r *pb.Ran) execclient.Result {
	res := execclient.Result{Success: r.GetSuccess(), Result: json.RawMessage(r.GetResult()), Logs: r.GetLogs(), Hash: r.GetHash(), Calls: r.GetCalls(), Duration: time.Duration(r.GetDurationNs())}
	if res.Logs == nil {
		res.Logs = []string{}
	}
	if len(res.Result) == 0 {
		res.Result = json.RawMessage("null")
	}
	if e := r.GetError(); e != nil {
		res.Error = &Error{Kind: Kind(e.GetKind()), Message: e.GetMessage(), Stack: e.GetStack(), Code: e.GetCode()}
	}
	return res
}
