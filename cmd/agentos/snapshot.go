package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"

	"github.com/agentos-run/agentos/admin"
)

// runSnapshot snapshots a process of the node serving the tool root (a
// Snapshot message to its kernel actor), kept in the node's journal:
// agentos snapshot [--root DIR] [--json] [--kill] PID|NAME.
func runSnapshot(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("snapshot", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print one JSON object {id, pid, name, image, mailbox}")
	kill := fs.Bool("kill", false, "end the process in the same step (no message reaches it in between); only such a snapshot restores, once: one without --kill restores only as a copy (agentos restore --fork)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] == "" {
		return usagef("snapshot takes one process: its PID or its name (agentos ps lists them), got %q", pos)
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
	info, err := c.Snapshot(ctx, admin.SnapshotRequest{Process: pos[0], Kill: *kill})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(info)
	}
	who := fmt.Sprint(info.PID)
	if info.Name != "" {
		who = fmt.Sprintf("%d (%s)", info.PID, info.Name)
	}
	fmt.Fprintf(stdout, "snapshot %s of process %s, image %s, %d waiting message(s)\n", info.ID, who, info.Image, info.Mailbox)
	if *kill {
		fmt.Fprintf(stdout, "process %d killed; restore it with 'agentos restore %s'\n", info.PID, info.ID)
	} else {
		fmt.Fprintf(stdout, "process %d runs on; this snapshot restores only as a copy that duplicates its budget ('agentos restore --fork --name NEW %s'); to move the process, snapshot it with --kill\n", info.PID, info.ID)
	}
	return nil
}

// runRestore restores a snapshot of the node's journal as a new process
// (a Restore message to its kernel actor): agentos restore [--root DIR]
// [--json] [--name NAME] [--fork] SNAPSHOT_ID. A snapshot restores once;
// --fork restores a copy.
func runRestore(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	root := fs.String("root", ".", rootUsage)
	asJSON := fs.Bool("json", false, "print one JSON object {pid, name}")
	name := fs.String("name", "", "register the restored process under this name instead of the snapshot's")
	fork := fs.Bool("fork", false, "restore a copy: the snapshot is not consumed and may have been restored before, or its process still run; the copy duplicates its rights and remaining budget")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] == "" {
		return usagef("restore takes one snapshot id (agentos snapshot prints it; agentos runs lists snapshots, kind snapshot), got %q", pos)
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
	rep, err := c.Restore(ctx, admin.RestoreRequest{Snapshot: pos[0], Name: *name, Fork: *fork})
	if ae := (*admin.AnswerError)(nil); errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return usagef("%v", err) // an unknown id exits 2, as in trace, replay and recover --run
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	if rep.Name != "" {
		fmt.Fprintf(stdout, "restored snapshot %s as process %d (%s)\n", pos[0], rep.PID, rep.Name)
	} else {
		fmt.Fprintf(stdout, "restored snapshot %s as process %d\n", pos[0], rep.PID)
	}
	return nil
}
