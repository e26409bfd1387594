package registry

// The registry actor's messages are protobuf messages, defined (and
// documented: sender, reply) in registrypb/registry.proto, generated into
// registrypb/registry.pb.go by `go generate ./actors/registry/...`. Callers
// use Client, which converts them to and from the domain types:
//
//	Register{path, source}  -> Registered{tool, failure}  Client.Register
//	Search{query, limit}    -> SearchResult{hits}         Client.Search
//	Get{path}               -> Got{tool}                  Client.Get
//	List{}                  -> Listed{tools}              Client.List
//	Used{path}              -> Counted{}                  Client.Used
//
// Every message can cross a node (system.CheckRemote). Errors cross as
// Failure{code, message}; wire.go maps the codes to the sentinel errors of
// errors.go and back.
//
// The registry's changes are not a message: the actor publishes a
// regclient.Changed on its actor system's EventStream after each one
// (Client.Watch), heard only on its own node.
//
// Rebuild, Remove and Flush are the Registry's methods, not messages: their
// only callers are the registry's owner (the runtime, rebuilding after a
// Git pull before the node boots, and flushing after it stopped).
