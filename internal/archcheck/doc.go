// Package archcheck holds no code: its tests check the module's
// architecture rules: the host's resources, the actors' siblings, and the
// functions' cyclomatic complexity.
//
// IMPORTANT: only the packages that own the host's I/O touch it: the
// executor (processes, confinement), git (the tool root's repository), vfs
// (the tool root's files as tools see them), the drivers (files, SQL, HTTP,
// the model's API) and the command line, with the packages under them. Any
// other package MUST NOT import os/exec, net, net/http, syscall,
// golang.org/x/sys/unix, io/ioutil or a database engine (bbolt, sqlite,
// pgx), nor call the os file APIs (os.Open, os.WriteFile, os.Remove,
// os.Stat ...) or walk the file system (filepath.WalkDir ...): it asks an
// owner. The exceptions are listed, each with the reason it needs the
// resource, in the table of archcheck_test.go; the test fails on a use not
// in the table and on an entry no longer needed. _test.go files are not
// checked.
//
// IMPORTANT: no function of the module's non-test, non-generated code has a
// cyclomatic complexity (gocyclo's count) over 30, but those listed in
// tooComplex (complexity_test.go), a list that may only shrink; the mean
// is reported against the goal of 4.5 and may not rise over its ceiling.
//
// IMPORTANT: no package, inside actors/ or not, imports an actor's package
// (actors/X) from outside it but the actor's *pb messages, a typed client
// package (actors/X/client) or a leaf (actors/system, actors/supervisor,
// actors/forge/check, internal/toolmeta); a leaf imports no actor package
// at all; only the composition root imports node and constructs or holds
// an actor's object (New, Open, Props, the object's type, and the
// functions that run on it: executor.Record, ReplayWith, Recover ...).
// Today's exceptions are listed in knownImports (imports_test.go), a list
// that may only shrink.
//
// Run it with: go test ./internal/archcheck/
package archcheck
