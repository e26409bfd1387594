// Command protogen compiles the repository's .proto files and writes the
// generated Go beside them, with nothing but Go installed: no protoc, no
// protoc-gen-go binary on PATH.
//
// Every actor's wire messages live in actors/<actor>/<actor>pb/<actor>.proto.
// Each of those pb packages has a gen.go with
//
//	//go:generate go run github.com/agentos-run/agentos/internal/protogen <actor>.proto
//
// so that
//
//	go generate ./actors/...
//
// regenerates every <actor>.pb.go. Run it after editing a .proto and commit the
// .proto and the .pb.go together: TestGeneratedCodeIsCurrent (in this package)
// regenerates every .proto under actors/ and fails with "run go generate
// ./actors/..." when a committed .pb.go differs byte for byte.
//
// # How it works
//
//  1. The named files (relative to the current directory, as go generate runs
//     in the package directory) are compiled by github.com/bufbuild/protocompile,
//     a pure-Go protobuf compiler. Import paths are relative to the module root
//     (the directory holding go.mod), so a file's descriptor name is its path
//     in the repository ("actors/registry/registrypb/registry.proto"), unique
//     in the process-wide protobuf registry, and one .proto imports another by
//     that path. The well-known types (google/protobuf/duration.proto,
//     timestamp.proto, empty.proto, ...) are available through protocompile's
//     standard imports.
//  2. The compiled descriptors (with comments) go into a
//     pluginpb.CodeGeneratorRequest exactly as protoc would send it to a
//     plugin, with the parameter paths=source_relative.
//  3. The official generator, google.golang.org/protobuf/cmd/protoc-gen-go
//     (its internal_gengo package), runs in process on that request, at the
//     google.golang.org/protobuf version go.mod pins, so the generated code
//     always matches the runtime library it links against.
//  4. Each response file is written next to its .proto.
//
// IMPORTANT: a .proto file MUST set go_package to its pb package's import path
// ("github.com/agentos-run/agentos/actors/<actor>/<actor>pb;<actor>pb"); the
// generator refuses a file without it. The header of a generated file reads
// "protoc (unknown)" because no protoc was involved.
//
// Usage:
//
//	go run github.com/agentos-run/agentos/internal/protogen [-root dir] file.proto...
//
// -root overrides the module root (default: the nearest parent directory of
// the current directory that holds go.mod).
package main
