package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/agentos-run/agentos/admin"
)

// runKill signals a process of the node serving the tool root (a message to
// its kernel actor): agentos kill [--root DIR] [--signal kill|term|stop|cont] PID.
func runKill(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("kill", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	sig := fs.String("signal", "kill", "kill (end it now), term (ask it to end), stop (pause it) or cont (resume it)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("kill takes one PID (agentos ps lists them), got %q", pos)
	}
	pid, err := strconv.ParseUint(pos[0], 10, 64)
	if err != nil || pid == 0 {
		return usagef("kill: %q is not a PID (a positive number, as agentos ps shows)", pos[0])
	}
	switch *sig {
	case "kill", "term", "stop", "cont":
	default:
		return usagef("kill: unknown signal %q (use kill, term, stop or cont)", *sig)
	}
	abs, _, err := openRoot(*root)
	if err != nil {
		return err
	}
	c, err := admin.Dial(abs)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Signal(ctx, admin.SignalRequest{PID: pid, Signal: *sig, By: "agentos kill"}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s sent to %d\n", *sig, pid)
	return nil
}
