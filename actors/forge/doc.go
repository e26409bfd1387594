// Package forge is the forge actor: reuse-or-forge, the closed loop that
// turns a spec into a checked, tested, registered and persisted tool.
//
// # Protocol
//
// The forge actor's messages are protobuf (forgepb/forge.proto); callers
// use Client (client.go): Run{run_key, spec, caller} and Resume{run_key, id,
// caller} are answered with Done{result, failure}; Cancel{run_key} stops a
// forge (it stays resumable). The caller is a process's token
// (executorpb.Caller): the candidate's tests run on the executor actor
// (Options.Executor, an execclient.Client) with the caller's rights, and each
// model answer's tokens and cost are charged to the caller through
// Options.Charger (the node's sends Charge to the kernel actor). The
// registry is searched and asked through the registry actor's client; a
// kept tool and its tests are written through the git actor's client.
//
// Run{Spec} is answered with Done{Result}. First reuse: the
// registry is searched and a tool scoring at least the threshold (0.85 by
// default) is returned as is. Otherwise forge: the model is asked for a
// tool and its tests (it calls submit_tool); check_tool judges the tool;
// the tests run in the sandbox against it; any failure goes back to the
// model word for word, at most MaxAttempts times (default 3). Only a tool
// whose check and tests pass is written: registered, committed and pushed
// by the git actor, its tests beside it (tools/x/y.test.ts).
//
// # Lifecycle
//
// Every model request and every test run of a forge is a call on a driver
// Host wrapped by the journal, under the forge's run (kind "forge"). Resume
// replays a crashed forge: the recorded answers come from the journal, so
// no model request is sent (or paid for) twice, and the loop goes on live.
//
// # Failure
//
// A forge that runs out of attempts fails with ErrGaveUp and a Result
// listing every attempt and its errors; nothing is registered. A cancelled
// forge (shutdown) leaves its run unfinished, to be resumed.
package forge
