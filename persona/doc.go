// Package persona keeps named, versioned system prompts (personas) in the
// tool root, and improves them by tournament.
//
// # Personas
//
// A persona is a file <dir>/<name>.md of the tool root (Store): a short
// front matter (name, description, protocol, version, parent, origin,
// created) between "---" lines, then the system prompt. Its version is the
// content hash of the prompt (Version); every version saved is also kept
// as <dir>/versions/<name>/<version>.md, so that an agent can be spawned
// with an older one ("name@version") and a version can be made current
// again (Store.Use). Both are ordinary files written through the git
// actor like tools, so personas are committed, pushed and pulled with them.
//
// # Tournaments
//
// Tournament has the model write variants of a persona's prompt, scores
// each candidate on a task set (TaskSet, ParseTasks) and ranks them by
// metered fitness (Weights: score, tokens, cost, wall time). Every model
// call goes through Options.LLM with a fixed Seq (see Seq), which the
// caller wraps in a journal run: a replay answers every call from the
// journal (zero model requests) and ranks alike (the recorded wall times,
// Options.Wall); a tournament a crash interrupted resumes and pays only
// for the calls never answered. agentos.Runtime.Tournament does this and
// saves the winner as the persona's new version.
package persona
