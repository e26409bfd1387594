// Package forgerun is a forge run's record in the journal: its kind (Kind)
// and the codec of its arguments (RunMeta.Args: the spec, the request that
// caused the run, the memories it recalls lessons from). The forge writes
// the record (Args.Encode); whoever finds a forge run in the journal reads
// it here (SpecOf, RequestOf, ArgsOf): the forge itself when it resumes or
// replays a run, the kernel tools and the cluster's forge grains looking
// for a spec's runs, and the MCP server answering a task after a restart.
//
// IMPORTANT: this package is a leaf (internal/archcheck): it imports no
// actor package, so any package may read a forge run without reaching the
// forge actor. The record's JSON MUST stay readable by older and newer
// nodes sharing a journal: a key, once written, keeps its name and meaning.
package forgerun
