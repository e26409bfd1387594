// Package tsparse is agentos's one TypeScript front end: it parses a tool's
// source with tree-sitter's TypeScript grammar and copies the syntax tree,
// in one cgo call, into a flat Go Tree that the checker (actors/forge/check)
// and the metadata extractor (internal/toolmeta) both walk in plain Go.
//
// # Protocol
//
// Parse parses a source and returns a Tree the caller owns. Shared returns
// the Tree of a source from a small cache of the latest sources parsed
// through it (keyed by content), so that the consumers of one new source
// (an exec's approval rating and its parameter check, check_tool and the
// registry's metadata) parse it once between them.
//
// # Concurrency
//
// Parse and Shared are safe for concurrent use (tree-sitter parsers are
// pooled). A Tree is immutable once returned. IMPORTANT: a Tree from
// Shared is shared with other callers: it MUST NOT be modified.
//
// # Failure
//
// Parsing never fails on bad input: a source that is not valid TypeScript
// gives a Tree with ERROR and MISSING nodes (Tree.HasError). Parse returns
// nil only when tree-sitter gives no tree at all, or the tree holds more
// than MaxNodes nodes.
package tsparse
