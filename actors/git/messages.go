package git

// WriteFile asks the git actor to write a tool file. Sender: the kernel,
// with RequestFuture. Reply: *Written.
type WriteFile struct {
	// Path is relative to the tool root, e.g. tools/math/fib.ts.
	Path    string
	Content []byte
}

// PatchFile asks the git actor to replace the first occurrence of Search in
// a file by Replace. Sender: the kernel, with RequestFuture. Reply: *Written;
// Err wraps ErrSearchNotFound when Search is absent.
type PatchFile struct {
	Path    string
	Search  string
	Replace string
}

// Written is the reply to WriteFile and PatchFile.
type Written struct {
	Path string `json:"path"`
	// Bytes is the new file's size.
	Bytes int `json:"bytes"`
	// Hash is the content hash of the new file (transpile.Hash).
	Hash string `json:"hash"`
	// Created says the file did not exist before.
	Created bool `json:"created"`
	// Commit is the commit that persisted the write ("" without a Repo).
	Commit string `json:"commit,omitempty"`
	// Branch is where it was pushed when not the shared branch: the review
	// branch (pr strategy), or the conflict branch keeping a version that
	// lost to another writer's.
	Branch string `json:"branch,omitempty"`
	// PRURL is the review opened for it (pr strategy).
	PRURL string `json:"pr_url,omitempty"`
	// Held says the file was written to the working tree only: it is a
	// tool source that does not compile (Err wraps ErrNotCompiled), so it
	// was neither registered nor persisted; the write that makes it
	// compile persists it.
	Held bool `json:"held,omitempty"`
	// Err is why the write failed or was not persisted (nil on success).
	Err error `json:"-"`
}
