package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// errStale is the push outcome "the upstream branch is not where we
// thought": another writer pushed first.
var errStale = errors.New("the upstream branch moved")

// token reads the HTTPS token from the environment (never cached, never
// logged).
func (r *Repo) token() string {
	if !isRemote(r.opts.Upstream) {
		return ""
	}
	return os.Getenv(r.opts.TokenEnv)
}

func (r *Repo) auth(token string) transport.AuthMethod {
	if token == "" {
		return nil
	}
	return &githttp.BasicAuth{Username: "x-access-token", Password: token}
}

// upstreamErr wraps a transport error in ErrUpstream, with the token
// removed from its text. When the text held the token the original error
// is dropped from the chain, so no Unwrap can reveal it.
func (r *Repo) upstreamErr(op string, err error, token string) error {
	msg := err.Error()
	if token != "" && strings.Contains(msg, token) {
		return fmt.Errorf("%w: %s %s: %s", ErrUpstream, op, r.opts.Upstream, redact(msg, token))
	}
	return fmt.Errorf("%w: %s %s: %w", ErrUpstream, op, r.opts.Upstream, err)
}

func (r *Repo) transport() (transport.Transport, *transport.Endpoint, error) {
	InstallTransport() // the "file" protocol served in process, never by the git binary
	ep, err := transport.NewEndpoint(r.opts.Upstream)
	if err != nil {
		return nil, nil, err
	}
	t, err := client.NewClient(ep)
	return t, ep, err
}

// fetch asks the upstream for its branch head and downloads the objects we
// lack. It returns the zero hash when the upstream has no such branch.
func (r *Repo) fetch(ctx context.Context) (plumbing.Hash, error) {
	var haves []plumbing.Hash
	if !r.fullFetch && !r.upstream.IsZero() && r.sto.HasEncodedObject(r.upstream) == nil {
		haves = append(haves, r.upstream)
	}
	head, err := r.fetchOnce(ctx, haves)
	if err != nil && len(haves) > 0 && ctx.Err() == nil {
		// go-git's server fails on a "have" it does not know (the upstream
		// was rewritten): ask for everything.
		head, err = r.fetchOnce(ctx, nil)
	}
	return head, err
}

func (r *Repo) fetchOnce(ctx context.Context, haves []plumbing.Hash) (plumbing.Hash, error) {
	token := r.token()
	t, ep, err := r.transport()
	if err != nil {
		return plumbing.ZeroHash, r.upstreamErr("fetch from", err, token)
	}
	sess, err := t.NewUploadPackSession(ep, r.auth(token))
	if err != nil {
		return plumbing.ZeroHash, r.upstreamErr("fetch from", err, token)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, r.upstreamErr("fetch from", err, token)
	}
	r.remote = ar.References
	head, ok := ar.References[plumbing.NewBranchReferenceName(r.opts.Branch).String()]
	if !ok || head.IsZero() {
		return plumbing.ZeroHash, nil
	}
	// A commit we hold is complete: objects are stored bottom-up (unless
	// a repair lost some: then everything is fetched again).
	if _, err := r.sto.EncodedObject(plumbing.CommitObject, head); err == nil && !r.fullFetch {
		return head, nil
	}
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	req.Capabilities.Delete(capability.ThinPack)
	if ar.Capabilities.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	req.Wants = []plumbing.Hash{head}
	req.Haves = haves
	shallow := len(haves) == 0 && r.wantShallow() && ar.Capabilities.Supports(capability.Shallow)
	if shallow {
		req.Depth = packp.DepthCommits(1)
		if err := req.Capabilities.Set(capability.Shallow); err != nil {
			return plumbing.ZeroHash, r.upstreamErr("fetch from", err, token)
		}
	}
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return plumbing.ZeroHash, r.upstreamErr("fetch from", err, token)
	}
	defer resp.Close()
	var rd io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		rd = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		rd = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	if err := unpack(r.sto.Storage, rd, fetchLooseLimit); err != nil {
		return plumbing.ZeroHash, r.upstreamErr("fetch from", err, token)
	}
	if _, err := r.sto.EncodedObject(plumbing.CommitObject, head); err != nil {
		return plumbing.ZeroHash, r.upstreamErr("fetch from", fmt.Errorf("commit %s missing after fetch: %w", head, err), token)
	}
	// The boundary is recorded before any ref points at the commits
	// (saveRefs comes later): a kill in between leaves objects no ref
	// reaches, never a ref whose history looks damaged.
	if shallow {
		err = r.recordShallow(resp.ShallowUpdate.Shallows)
	} else if len(haves) == 0 {
		err = r.dropShallow() // everything reachable from head is here now
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("repo: recording the shallow boundary in %s/%s: %w", r.gitDir, shallowFile, err)
	}
	r.fullFetch = false
	return head, nil
}

// push sends objs and asks the upstream to move ref from old to new (old
// zero: create). It returns an error wrapping errStale when the reference
// is not at old any more.
func (r *Repo) push(ctx context.Context, ref plumbing.ReferenceName, old, new plumbing.Hash, objs []plumbing.Hash) error {
	token := r.token()
	t, ep, err := r.transport()
	if err != nil {
		return r.upstreamErr("push to", err, token)
	}
	sess, err := t.NewReceivePackSession(ep, r.auth(token))
	if err != nil {
		return r.upstreamErr("push to", err, token)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return r.upstreamErr("push to", err, token)
	}
	if ar != nil {
		if cur := ar.References[ref.String()]; cur != old {
			return fmt.Errorf("%w: %s is at %s, not %s", errStale, ref, short(cur), short(old))
		}
	}
	req := packp.NewReferenceUpdateRequest()
	if ar != nil {
		req = packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	}
	req.Commands = []*packp.Command{{Name: ref, Old: old, New: new}}
	useRefDeltas := ar == nil || !ar.Capabilities.Supports(capability.OFSDelta)

	rd, wr := io.Pipe()
	req.Packfile = rd
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		defer func() { _ = wr.CloseWithError(err) }()
		defer recoverInto(&err, r.log, "encoding the objects to push")
		// Window 0: no delta search; pushes are a handful of new objects.
		_, err = packfile.NewEncoder(wr, r.sto, useRefDeltas).Encode(objs, 0)
	}()
	rs, err := sess.ReceivePack(ctx, req)
	_ = rd.Close() // unblocks the encoder if the receiver stopped reading
	encErr := <-done
	if encErr != nil && !errors.Is(encErr, io.ErrClosedPipe) {
		// Our own objects could not be read: that, not the upstream's
		// complaint about the truncated pack, is the error.
		return fmt.Errorf("repo: reading the local objects to push: %w", encErr)
	}
	if err == nil && rs != nil {
		err = rs.Error()
	}
	if err != nil {
		if strings.Contains(err.Error(), statusStale) || strings.Contains(err.Error(), "fetch first") ||
			strings.Contains(err.Error(), "non-fast-forward") || strings.Contains(err.Error(), "stale info") {
			return fmt.Errorf("%w: %s", errStale, redact(err.Error(), token))
		}
		return r.upstreamErr("push to", err, token)
	}
	return nil
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "nothing"
	}
	return h.String()[:8]
}
