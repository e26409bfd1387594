package repo

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Behind says whether the tool root opts.Dir lags its upstream: it has no
// repository yet, or the upstream's branch head is not the commit the tool
// root last took from it (its tracking ref). It is the cheap check readers
// of the tool root (exec, check) make before deciding to Hydrate: one
// reference advertisement from the upstream (what git ls-remote asks), no
// fetch, no lock, nothing written. Local commits not pushed yet do not
// make a tool root behind.
//
// Errors wrap ErrOptions or ErrUpstream (the upstream cannot be reached:
// the caller may go on with the local copy).
func Behind(ctx context.Context, opts Options) (bool, error) {
	InstallTransport()
	o, err := opts.normalize()
	if err != nil {
		return false, err
	}
	r := &Repo{opts: o, gitDir: filepath.Join(o.Dir, ".git")}
	if _, err := os.Stat(filepath.Join(r.gitDir, "HEAD")); errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	trackRef := plumbing.NewRemoteReferenceName("origin", o.Branch)
	track, ok := readLooseRef(r.gitDir, trackRef)
	if !ok {
		track = readPackedRefs(r.gitDir)[trackRef]
	}
	token := r.token()
	t, ep, err := r.transport()
	if err != nil {
		return false, r.upstreamErr("ls-remote", err, token)
	}
	sess, err := t.NewUploadPackSession(ep, r.auth(token))
	if err != nil {
		return false, r.upstreamErr("ls-remote", err, token)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return track.IsZero(), nil
	}
	if err != nil {
		return false, r.upstreamErr("ls-remote", err, token)
	}
	head := ar.References[plumbing.NewBranchReferenceName(o.Branch).String()]
	if head != track {
		return true, nil
	}
	// Up to date with the upstream; behind only if the objects are gone.
	if _, err := os.Stat(filepath.Join(r.gitDir, "index")); err != nil {
		return true, nil
	}
	return false, nil
}
