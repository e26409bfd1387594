package registry

// Shards: what makes a write's commit cost the same whatever the number
// of tools.
//
// The registry file used to be one JSON document (meta.json) holding every
// tool; every write rewrote it, and Git stored, compressed, packed and
// pushed the whole of it with each commit (6 MB at 10,000 tools). It is now
// split into Shards files beside it: the entry of the tool at path p lives
// in <dir>/<xx>.json, where <dir> is the registry file's path without its
// extension (meta.json -> meta/) and xx is the FNV-1a 32-bit hash of p
// modulo Shards, in two lowercase hex digits. Each shard has the shape the
// single file had ({"tools": {path: entry}}, keys sorted, two-space
// indent, final newline); a shard with no tool is no file. A write
// rewrites one shard (about 1/256th of the registry: 24 KB at 10,000
// tools) and the Git tree above it, never the rest.
//
// Compatibility. A tool root that still has the single file (a
// repository made before the shards, or by `agentos init`) is read as
// before; its entries are written into the shards and the single file is
// removed once every shard holding one of them is written: the next
// commit carries the migration (the shards and the single file's
// deletion), after which the single file is gone for every node. Where
// both exist (another node migrated meanwhile), an entry in a shard
// wins over the single file's unless the latter's version is higher.

import (
	"fmt"
	"hash/fnv"
	"path"
	"strings"
)

// Shards is the number of files the registry is split into.
const Shards = 256

// Files returns the paths, relative to the tool root, of every file a
// registry whose Options.File is file may write: the single file of
// earlier versions (removed by the migration), then the Shards shard
// files. A Git integration commits them as derived files.
func Files(file string) []string {
	out := make([]string, 0, Shards+1)
	out = append(out, file)
	dir := shardDir(file)
	for i := range Shards {
		out = append(out, shardPath(dir, i))
	}
	return out
}

// shardDir is the directory of the shards of the registry file f:
// f without its extension (meta.json -> meta), or f + ".d" when f has none.
func shardDir(f string) string {
	if ext := path.Ext(f); ext != "" && ext != f {
		return strings.TrimSuffix(f, ext)
	}
	return f + ".d"
}

// shardPath is the file of shard i in dir.
func shardPath(dir string, i int) string { return fmt.Sprintf("%s/%02x.json", dir, i) }

// shardOf is the shard of the tool at path p.
func shardOf(p string) int {
	h := fnv.New32a()
	h.Write([]byte(p))
	return int(h.Sum32() % Shards)
}

// member adds p to its shard's set. The caller holds r.mu.
func (r *Registry) member(p string) {
	i := shardOf(p)
	if r.members[i] == nil {
		r.members[i] = map[string]struct{}{}
	}
	r.members[i][p] = struct{}{}
}

// touch marks p's shard as differing from its file. The caller holds r.mu.
func (r *Registry) touch(p string) {
	r.dirtyShards[shardOf(p)] = true
	r.dirty = true
}

// setTool records t as the entry of p and marks its shard. The caller
// holds r.mu.
func (r *Registry) setTool(p string, t *Tool) {
	r.tools[p] = t
	r.member(p)
	r.touch(p)
}

// dropTool forgets the entry of p and marks its shard. The caller holds
// r.mu.
func (r *Registry) dropTool(p string) {
	delete(r.tools, p)
	delete(r.members[shardOf(p)], p)
	r.touch(p)
}

// Written returns the registry files (relative to the tool root) written
// or removed since the previous call, and forgets them: what a Git
// integration must commit after a Flush (repo.Options.Derive). It is
// O(files changed), never O(tools).
func (r *Registry) Written() []string {
	r.io.Lock()
	defer r.io.Unlock()
	out := make([]string, 0, len(r.changedFiles))
	for f := range r.changedFiles {
		out = append(out, f)
	}
	clear(r.changedFiles)
	return out
}

// ShardFile returns the path, relative to the tool root, of the shard
// file that holds the entry of the tool at toolPath, for a registry whose
// Options.File is file (e.g. ShardFile("meta.json", "tools/a.ts")).
func ShardFile(file, toolPath string) string {
	return shardPath(shardDir(file), shardOf(toolPath))
}
