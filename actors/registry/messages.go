package registry

// Messages of the registry actor (Props). Send them as pointers. Requests
// are answered with ctx.Respond, so send them with RequestFuture (or
// Request from an actor).

// Register asks the registry to register (upsert) a tool from its source.
// Sender: the kernel or the git actor's caller, after a tool file was
// written. Reply: *Registered.
type Register struct {
	// Path is relative to the tool root, e.g. tools/math/fib.ts.
	Path string
	// Source is the file's content as written.
	Source []byte
}

// Registered is the reply to Register.
type Registered struct {
	// Tool is the registry entry after the call (unchanged when Source's
	// hash was already registered).
	Tool Tool
	// Err is why nothing was registered (ErrNotTool, a path error), or,
	// wrapping ErrPersist, why the registered tool is not on disk yet.
	Err error
}

// Search asks for the tools best matching a query. Sender: the kernel
// (search_tools) or the forge (reuse or forge). Reply: *SearchResult.
type Search struct {
	Query string
	// Limit is the most hits wanted; <= 0 means 10.
	Limit int
}

// SearchResult is the reply to Search.
type SearchResult struct {
	// Hits are best first, never nil.
	Hits []Hit
}

// Rebuild asks the registry to re-scan the tools on disk, e.g. after a Git
// merge or pull. Sender: the git actor's caller. Reply: *Rebuilt.
type Rebuild struct{}

// Rebuilt is the reply to Rebuild.
type Rebuilt struct {
	// Err wraps ErrScan or ErrPersist; nil on success.
	Err error
}

// Used counts one use (run) of a tool. Sender: the kernel, after exec_tool.
// No reply. Unknown paths are ignored.
type Used struct {
	Path string
}

// Remove asks the registry to drop a tool (its file was deleted). Sender:
// the kernel. Reply: *Removed.
type Remove struct {
	Path string
}

// Removed is the reply to Remove.
type Removed struct {
	// Err wraps ErrNotRegistered or ErrPersist; nil on success.
	Err error
}

// Flush asks the registry to write pending usage counts. Sender: anyone,
// e.g. before a commit of meta.json. Reply: *Flushed.
type Flush struct{}

// Flushed is the reply to Flush.
type Flushed struct {
	// Err wraps ErrPersist; nil on success.
	Err error
}
