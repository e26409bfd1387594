package executor

import (
	"fmt"
	"path"
	"strings"

	execclient "github.com/agentos-run/agentos/actors/executor/client"
	pb "github.com/agentos-run/agentos/actors/executor/executorpb"
	"github.com/agentos-run/agentos/vfs"
)

// StagingDir is the directory, under the tools directory, where the forge
// stages a candidate and its tests while they run: a dot directory, so the
// registry never indexes it and Git never commits it. A Run's overlay
// (pb.Run.overlay) may name paths under it only.
const StagingDir = ".forge"

// Bounds of a Run's overlay: the number of modules, and the size of each
// (a forged tool or its tests; a generated tool of several megabytes is
// written to the tool tree and run from there).
const (
	MaxOverlayModules = 16
	MaxOverlayBytes   = 4 << 20
)

// overlayOf is m's overlay, checked, by clean path: nil when m has none.
// It is refused (an error wrapping execclient.ErrOverlay) when m came from
// another node (modules from another node are never run: a remote run is
// held to this node's own files), names a path outside StagingDir, or
// holds too many modules or one too large.
func (s *actorState) overlayOf(m *pb.Run, remote bool) (map[string][]byte, error) {
	ov := m.GetOverlay()
	switch {
	case len(ov) == 0:
		return nil, nil
	case remote:
		return nil, fmt.Errorf("%w: a Run of %s from another node carries %d modules to run from memory; another node's code never runs here: send the run without them", execclient.ErrOverlay, m.GetPath(), len(ov))
	case len(ov) > MaxOverlayModules:
		return nil, fmt.Errorf("%w: %d modules to run from memory, at most %d", execclient.ErrOverlay, len(ov), MaxOverlayModules)
	}
	staging := path.Join(path.Clean(s.ex.opts.ToolsDir), StagingDir) + "/"
	out := make(map[string][]byte, len(ov))
	for p, src := range ov {
		c, err := vfs.Clean(p)
		if err != nil || !strings.HasPrefix(c, staging) {
			return nil, fmt.Errorf("%w: %q is not under the staging directory %s: only the forge's staged candidates run from memory", execclient.ErrOverlay, p, staging)
		}
		if len(src) > MaxOverlayBytes {
			return nil, fmt.Errorf("%w: %s is %d bytes, over the %d bytes a module run from memory may have: write it to the tool tree and run it from there", execclient.ErrOverlay, c, len(src), MaxOverlayBytes)
		}
		out[c] = src
	}
	return out, nil
}
