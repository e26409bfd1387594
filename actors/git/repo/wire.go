package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
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
	head, need := r.wantedHead(ar.References)
	if !need {
		return head, nil
	}
	shallow := len(haves) == 0 && r.wantShallow() && ar.Capabilities.Supports(capability.Shallow)
	req, err := uploadRequest(ar.Capabilities, head, haves, shallow)
	if err != nil {
		return plumbing.ZeroHash, r.upstreamErr("fetch from", err, token)
	}
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return plumbing.ZeroHash, r.upstreamErr("fetch from", err, token)
	}
	defer resp.Close()
	if err := unpack(r.sto.Storage, demux(resp, req.Capabilities)); err != nil {
		return plumbing.ZeroHash, r.upstreamErr("fetch from", err, token)
	}
	if _, err := r.sto.EncodedObject(plumbing.CommitObject, head); err != nil {
		return plumbing.ZeroHash, r.upstreamErr("fetch from", fmt.Errorf("commit %s missing after fetch: %w", head, err), token)
	}
	// The boundary is recorded before any ref points at the commits
	// (saveRefs comes later): a kill in between leaves objects no ref
	// reaches, never a ref whose history looks damaged.
	if err := r.recordBoundary(shallow, len(haves) == 0, resp.ShallowUpdate.Shallows); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("repo: recording the shallow boundary in %s/%s: %w", r.gitDir, shallowFile, err)
	}
	r.fullFetch = false
	return head, nil
}

// wantedHead returns the head of our branch among the advertised
// references (zero when the upstream has no such branch), and whether its
// objects must be fetched.
func (r *Repo) wantedHead(refs map[string]plumbing.Hash) (head plumbing.Hash, need bool) {
	head, ok := refs[plumbing.NewBranchReferenceName(r.opts.Branch).String()]
	if !ok || head.IsZero() {
		return plumbing.ZeroHash, false
	}
	// A commit we hold is complete: objects are stored bottom-up (unless
	// a repair lost some: then everything is fetched again).
	if _, err := r.sto.EncodedObject(plumbing.CommitObject, head); err == nil && !r.fullFetch {
		return head, false
	}
	return head, true
}

// uploadRequest asks for head's objects beyond haves, without thin packs
// nor progress, and only head's own commit when shallow.
func uploadRequest(caps *capability.List, head plumbing.Hash, haves []plumbing.Hash, shallow bool) (*packp.UploadPackRequest, error) {
	req := packp.NewUploadPackRequestFromCapabilities(caps)
	req.Capabilities.Delete(capability.ThinPack)
	if caps.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	req.Wants = []plumbing.Hash{head}
	req.Haves = haves
	if shallow {
		req.Depth = packp.DepthCommits(1)
		if err := req.Capabilities.Set(capability.Shallow); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// demux returns the pack stream of an upload-pack response, taken out of
// its side band when the request asked for one.
func demux(resp io.Reader, caps *capability.List) io.Reader {
	switch {
	case caps.Supports(capability.Sideband64k):
		return sideband.NewDemuxer(sideband.Sideband64k, resp)
	case caps.Supports(capability.Sideband):
		return sideband.NewDemuxer(sideband.Sideband, resp)
	}
	return resp
}

// recordBoundary records the shallow boundary a fetch leaves: the
// server's shallows after a shallow fetch, none after a full one
// (everything reachable from the head is here then).
func (r *Repo) recordBoundary(shallow, full bool, shallows []plumbing.Hash) error {
	switch {
	case shallow:
		return r.recordShallow(shallows)
	case full:
		return r.dropShallow()
	}
	return nil
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
	req := packp.NewReferenceUpdateRequest()
	if ar != nil {
		if cur := ar.References[ref.String()]; cur != old {
			return fmt.Errorf("%w: %s is at %s, not %s", errStale, ref, short(cur), short(old))
		}
		req = packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	}
	req.Commands = []*packp.Command{{Name: ref, Old: old, New: new}}
	return r.sendPack(ctx, sess, req, objs, token)
}

// sendPack sends req with a pack of objs encoded as it streams, and
// returns the outcome: nil, an error wrapping errStale when the upstream
// refused a stale update, or what failed (our objects' encoding first).
func (r *Repo) sendPack(ctx context.Context, sess transport.ReceivePackSession, req *packp.ReferenceUpdateRequest, objs []plumbing.Hash, token string) error {
	rd, wr := io.Pipe()
	req.Packfile = rd
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		defer func() { _ = wr.CloseWithError(err) }()
		defer recoverInto(&err, r.log, "encoding the objects to push")
		// Whole objects, no delta search: pushes are a handful of new
		// objects (and no delta means no choice between ref and offset
		// deltas to make from the upstream's capabilities).
		err = encodeWhole(wr, r.sto, objs, pushZlib(sess, len(objs)))
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
	if err == nil {
		return nil
	}
	if refusedAsStale(err.Error()) {
		return fmt.Errorf("%w: %s", errStale, redact(err.Error(), token))
	}
	return r.upstreamErr("push to", err, token)
}

// pushZlib is how a push of n objects through sess is compressed: not at
// all when our own receive-pack, in this process, stores it (the pack
// never reaches a network, the upstream keeps it as it arrives, and its
// next merge of packs compresses it: compressing a tree of 10,000 entries
// only to store it so cost 5.7 ms), unless it holds storedPushMax objects
// or more (a first push of a large tool tree, a pack merged rarely if
// ever); at zlib.BestSpeed otherwise.
func pushZlib(sess transport.ReceivePackSession, n int) *sync.Pool {
	if _, local := sess.(*receiveSession); local && n < storedPushMax {
		return storedZlib
	}
	return fastZlib
}

// storedPushMax bounds the objects of a push to a local upstream sent
// uncompressed.
const storedPushMax = 100

// staleRefusals are the texts by which an upstream refuses an update
// whose old value is not its reference's any more.
var staleRefusals = []string{statusStale, "fetch first", "non-fast-forward", "stale info"}

// refusedAsStale says whether the push error text msg is a refusal of a
// stale update.
func refusedAsStale(msg string) bool {
	for _, s := range staleRefusals {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "nothing"
	}
	return h.String()[:8]
}
