// Package personagate holds persona versions for approval, as the
// approval gate holds forged tools.
//
// Personas are system prompts, and anyone who can push to the upstream can
// change them on every node (protocol: false included). So a persona
// version is trusted like a forged tool is: a version this node saved
// (SavePersona, UsePersona, a tournament's winner) is recorded approved in
// the approvals file as it is saved (Gate.Saved); any other version
// (pulled from the upstream, edited into the file by hand) is recorded
// pending, with the author of the commit that last changed the persona's
// file, the first time an agent would use it, and the agent uses the
// newest version of that persona that is approved, saying so at Warn
// (Gate.Approved). `agentos approve personas/NAME.md@VERSION` approves it
// (Gate.Decide). A version named explicitly (name@version) is used only
// when approved. With agents.approve_personas false, every version is used
// as found (Gate.Open answers no store).
//
// # Lifecycle
//
// A Gate holds no state of its own: it opens the approvals file (Open) for
// each decision, so that a node and the CLI share it.
//
// # Failure
//
// A held version named explicitly, or held with no approved version to use
// meanwhile, is an error saying how to approve it.
package personagate
