// Package archcheck holds no code: its test checks the module's
// architecture rule on the host's resources.
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
// Run it with: go test ./internal/archcheck/
package archcheck
