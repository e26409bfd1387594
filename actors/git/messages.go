package git

// The git actor's messages are protobuf messages, defined (and documented:
// sender, reply) in gitpb/git.proto, generated into gitpb/git.pb.go by
// `go generate ./actors/git/...`. Callers use gitclient.Client
// (actors/git/client), which converts them to and from the domain types:
//
//	WriteFile{path, content}          -> Written{..., failure}  Client.WriteFile
//	PatchFile{path, search, replace}  -> Written{..., failure}  Client.PatchFile
//	Announce{commit, branch}          -> Synced{..., failure}   Client.Announce
//	WaitFor{commit, timeout_ms}       -> Synced{..., failure}   Client.WaitFor
//	Pull{}                            -> Synced{..., failure}   Client.Pull
//
// Committed{commit, branch, paths} is no request: the actor hands it to
// Options.OnCommitted after every push to the shared branch, for the
// cluster to publish; a node that receives it sends its git actor an
// Announce of it.
//
// Every message can cross a node (system.CheckRemote). Errors cross as
// Failure{code, message}: gitclient.FailureOf makes one of an error (the
// actor's side), and the client maps the code back to its sentinel.
// The actor itself sends Register to the registry actor (regclient.Client)
// for every file it writes.
