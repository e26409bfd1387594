// Package toolmeta is what a tool's source says of it, and the search over
// tools: a leaf the registry, the executor, memory and the MCP tools share
// (issue 27: no package reaches the registry's package for it).
//
// # Extraction
//
// Extract parses a tool's TypeScript source with the one front end the
// checker also uses (internal/tsparse: tree-sitter's grammar, its tree
// copied flat into Go, the latest sources' trees shared, so that a source
// the checker just parsed is not parsed again) and reads its description
// (the leading JSDoc: the one right before the default export, else before
// the declaration the default export names, else the first before the
// first statement), its @tag lines and the JSON
// Schema of the default export's first parameter when its type is declared
// (inline object types, local interfaces and type aliases, number /
// string / boolean / arrays / nested objects / literal unions; anything
// else {}). A source that does not parse gives what could be found.
// ParamsOf turns that schema into Params, which validate a call's
// arguments (the executor holds a tool's arguments to it).
//
// # Search
//
// Inverted ranks tools with BM25F over name, tags, description and path and
// reports a score normalised to 0..1: the idf-weighted share of the query
// the tool covers (actors/registry's Registry.Search documents the
// formula). Index is the same ranking over tools that live outside a
// registry (the MCP servers' tools, memory items), so that result lists
// merge by score.
//
// # Concurrency
//
// Extract, ParamsOf and Params are safe for concurrent use (tree-sitter
// parsers are pooled). IMPORTANT: an Inverted is not: its owner MUST guard
// it; an Index is.
package toolmeta
