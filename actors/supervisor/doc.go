// Package supervisor is supervision as data on protoactor-go: a Spec names a
// strategy, a restart intensity, a backoff and an ordered list of children,
// and Props turns it into a supervisor actor that starts the children in
// order and restarts them as the spec says.
//
// # One engine, two supervisors
//
// The decisions are made by Engine (engine.go), a pure value with no actor,
// goroutine or clock: fed "child i ended, normally or not, at time t", it
// answers with a Decision: restart these children in start order after
// this delay (and stop these temporary siblings for good), stop the child,
// or give up (ActionEscalate: intensity exceeded), with the Event to
// report. It is shared by the two supervisors of agentos: the protoactor
// supervisor actor of this package (Props), which carries decisions out
// with protoactor's restart and stop, and the kernel's supervisor
// processes (actors/kernel Supervise), which carry them out with kills,
// links and spawns. A rule of supervision is changed once, in Engine, and
// tested there (engine_test.go) as a table, without actors.
//
// # Protocol
//
// The supervisor answers WhichChildren with Children (the live children in
// start order). Every decision it takes is reported to Spec.OnEvent.
//
// # Lifecycle
//
// On Started the supervisor spawns its children in spec order. A child that
// fails (panics) is handled by the strategy:
//
//	OneForOne   restart the failed child
//	OneForAll   restart every child
//	RestForOne  restart the failed child and every child started after it
//
// subject to each child's Restart type (Permanent and Transient children are
// restarted after a failure; a Temporary child is stopped and dropped), to
// Backoff (each consecutive restart within Period waits Initial × Factor^n,
// capped at Max: really exponential, unlike protoactor's own backoff, which
// grows linearly), and to the intensity: more than Intensity restarts within
// Period and the supervisor gives up and escalates the failure to its own
// parent, as Erlang's supervisors do.
//
// # Failure
//
// IMPORTANT: protoactor's own strategies differ in ways this package fences:
// AllForOne stops every child once its limit is hit instead of escalating,
// and restart statistics are kept per child, where intensity must count the
// supervisor's restarts; Supervisor.Children() loses start order when a
// child stops (PIDSet removes by swapping), so RestForOne keeps its own
// ordered list. protoactor's Restart also resurrects a child that has
// already processed its Stop (it runs Started again outside the registry
// and the tree), so a failure that reaches a supervisor while it stops or
// restarts its children MUST NOT restart, and does not: the child is
// stopped (ActionStop). A Backoff restart is carried out by the supervisor
// itself and dropped if the supervisor has stopped or restarted since it
// was decided (its children come back under the same names, so a stale
// restart would hit a child that never failed). A panic in a child never
// takes the process down.
package supervisor
