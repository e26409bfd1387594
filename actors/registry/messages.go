package registry

// The registry actor's messages are protobuf messages, defined (and
// documented: sender, reply) in registrypb/registry.proto, generated into
// registrypb/registry.pb.go by `go generate ./actors/registry/...`. Callers
// use Client, which converts them to and from the domain types:
//
//	Register{path, source}  -> Registered{tool, failure}  Client.Register
//	Search{query, limit}    -> SearchResult{hits}         Client.Search
//	Get{path}               -> Got{tool}                  Client.Get
//	Rebuild{}               -> Rebuilt{failure}           Client.Rebuild
//	Used{path}              (no reply)                    Client.Used
//	Remove{path}            -> Removed{failure}           Client.Remove
//	Flush{}                 -> Flushed{failure}           Client.Flush
//
// Every message can cross a node (system.CheckRemote). Errors cross as
// Failure{code, message}; wire.go maps the codes to the sentinel errors of
// errors.go and back.
