package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// InstallTransport replaces, process-wide, go-git's client for the "file"
// protocol (local paths and file:// URLs) by this package's in-process one
// (client.InstallProtocol). go-git's default executes the
// git-upload-pack / git-receive-pack binaries when they are installed;
// IMPORTANT: this package never runs the git binary.
//
// It is idempotent (a sync.Once) and cheap, and every entry point of this
// package that may reach an upstream calls it first (Hydrate, InitBare,
// Behind, and every fetch or push through Repo.transport): a caller of this
// package never needs to. It affects every go-git fetch, clone or push to
// a local repository in the process after the first call (the package's
// and any other caller's): a program that uses go-git directly on local
// repositories without going through this package, and wants them served
// in process, MUST call it once at startup. It used to run from an init();
// it is an explicit call so that importing the package changes nothing.
//
// What the installed transport does:
//
//   - upload-pack (fetch, clone) sends the objects between the wants and
//     the haves found by walking back from the wants (go-git's server,
//     plumbing/transport/server, lists everything reachable from the haves:
//     a cost growing with the history at every fetch); a depth-1 request
//     without haves (a first clone) gets the wants and their trees, and the
//     wants with parents as the shallow boundary;
//   - receive-pack (push): go-git's server updates a
//     reference without comparing it with the old value the client saw (two
//     concurrent pushes both "win" and the first is lost) and writes the
//     ref file in place (a kill mid-write empties the branch). Ours takes an
//     exclusive flock on the repository directory for the whole push,
//     compares each reference with the command's old value (a moved branch
//     is rejected: "fetch first"), and writes refs by rename. Each push is
//     kept as the pack it arrived in, and the upstream's packs are merged
//     as they pile up (see mergeUpstreamPacks) while no fetch reads them
//     (upload-pack holds the objects directory's readers' lock from the
//     moment it reads objects).
//
// IMPORTANT: the flock is advisory: writers of a local upstream MUST be
// processes using this package (the git binary, which uses ref.lock files,
// is not excluded).
func InstallTransport() {
	installTransport.Do(func() { client.InstallProtocol("file", fileTransport{}) })
}

var installTransport sync.Once

// fileTransport is the in-process transport installed for "file".
type fileTransport struct{}

func (t fileTransport) NewUploadPackSession(ep *transport.Endpoint, _ transport.AuthMethod) (transport.UploadPackSession, error) {
	dir, err := resolveGitDir(ep.Path)
	if err != nil {
		return nil, err
	}
	return &uploadSession{dir: dir, sto: openStorage(dir)}, nil
}

// uploadSession is the in-process upload-pack.
type uploadSession struct {
	dir    string
	sto    *filesystem.Storage
	unlock func() // releases the readers' lock, once UploadPack took it
	// pack is the pipe the pack is read from, and encoding is closed when
	// the goroutine writing it ends: Close stops and waits for it, so the
	// storage is never closed under a reader.
	pack     *io.PipeReader
	encoding chan struct{}
	stopCtx  func() bool // stops the closing of pack at the request's end
}

func (s *uploadSession) Close() error {
	if s.encoding != nil {
		s.stopCtx()
		_ = s.pack.Close()
		<-s.encoding
	}
	err := s.sto.Close()
	if s.unlock != nil {
		s.unlock()
	}
	return err
}

// readLock takes the objects directory's readers' lock, held until Close
// (no merge of the upstream's packs deletes one this session lists; see
// mergePacks), and opens the storage again under it. Only the objects
// need it: an advertisement (Behind's, a fetch's first step) reads refs.
func (s *uploadSession) readLock(ctx context.Context) error {
	if s.unlock != nil {
		return nil
	}
	unlock, err := readLockDir(ctx, filepath.Join(s.dir, "objects"))
	if err != nil {
		return fmt.Errorf("taking the readers' lock of %s: %w", s.dir, err)
	}
	s.unlock = unlock
	_ = s.sto.Close()
	s.sto = openStorage(s.dir)
	return nil
}

func (s *uploadSession) AdvertisedReferences() (*packp.AdvRefs, error) {
	return s.AdvertisedReferencesContext(context.Background())
}

func (s *uploadSession) AdvertisedReferencesContext(ctx context.Context) (*packp.AdvRefs, error) {
	ar, err := advertise(ctx, s.sto)
	if err != nil {
		return nil, err
	}
	if err := ar.Capabilities.Set(capability.Shallow); err != nil {
		return nil, err
	}
	if len(ar.References) == 0 {
		return nil, transport.ErrEmptyRemoteRepository
	}
	return ar, nil
}

// UploadPack sends the objects reachable from the wants and not from the
// haves. Unlike go-git's server, which lists every object reachable from
// the haves (the whole history), it walks back from each want only until a
// have and sends, per new commit, the objects its tree adds to its first
// parent's: the cost follows what is new, not the history's size.
func (s *uploadSession) UploadPack(ctx context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	if req.IsEmpty() {
		return nil, transport.ErrEmptyUploadPackRequest
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if err := s.readLock(ctx); err != nil {
		return nil, err
	}
	var objs, shallows []plumbing.Hash
	var err error
	switch {
	case req.Depth == packp.DepthCommits(1) && len(req.Shallows) == 0 && len(req.Haves) == 0:
		// A first checkout that needs no history: the wants and their
		// trees; the wants with parents are the shallow boundary.
		objs, shallows, err = objectsAt(s.sto, req.Wants)
	case len(req.Shallows) > 0 || !req.Depth.IsZero():
		return nil, errors.New("only a shallow fetch of depth 1 without haves (a first checkout) is supported")
	default:
		objs, err = objectsBetween(s.sto, req.Wants, req.Haves)
	}
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	s.pack, s.encoding = pr, make(chan struct{})
	// ctx's end closes the pipe: its reader reads ctx's error (go-git's
	// context reader would instead start a goroutine and allocate a
	// buffer of the reader's size on every Read).
	s.stopCtx = context.AfterFunc(ctx, func() { _ = pw.CloseWithError(context.Cause(ctx)) })
	go func() {
		var err error
		defer close(s.encoding)
		defer func() { _ = pw.CloseWithError(err) }()
		defer recoverInto(&err, nil, "encoding the objects to send")
		err = encodeWhole(pw, s.sto, objs, fastZlib)
	}()
	resp := packp.NewUploadPackResponseWithPackfile(req, endedReader{ctx: ctx, PipeReader: pr})
	resp.ShallowUpdate.Shallows = shallows
	return resp, nil
}

// endedReader is the pack's reader: once ctx has ended, a read returns its
// error, even when the pipe still holds bytes or the AfterFunc that closes
// it has not run yet (ctx.Err is a check, not a goroutine).
type endedReader struct {
	ctx context.Context
	*io.PipeReader
}

func (r endedReader) Read(p []byte) (int, error) {
	if r.ctx.Err() != nil {
		return 0, context.Cause(r.ctx)
	}
	return r.PipeReader.Read(p)
}

// objectsAt lists the wanted commits and every object of their trees (a
// depth-1 fetch), and the wanted commits that have parents (the shallow
// boundary the client records).
func objectsAt(s storer.EncodedObjectStorer, wants []plumbing.Hash) (objs, shallows []plumbing.Hash, err error) {
	out := map[plumbing.Hash]bool{}
	for _, h := range wants {
		c, err := object.GetCommit(s, h)
		if err != nil {
			return nil, nil, fmt.Errorf("commit %s: %w", h, err)
		}
		out[h] = true
		if len(c.ParentHashes) > 0 {
			shallows = append(shallows, h)
		}
		if c.TreeHash == emptyTree {
			out[emptyTree] = true
		}
		if err := newObjects(s, plumbing.ZeroHash, c.TreeHash, out); err != nil {
			return nil, nil, err
		}
	}
	objs = make([]plumbing.Hash, 0, len(out))
	for h := range out {
		objs = append(objs, h)
	}
	return objs, shallows, nil
}

// objectsBetween lists the objects reachable from wants but not from
// haves (assuming whoever has a commit has everything it reaches).
func objectsBetween(s storer.EncodedObjectStorer, wants, haves []plumbing.Hash) ([]plumbing.Hash, error) {
	stop := map[plumbing.Hash]bool{}
	for _, h := range haves {
		stop[h] = true
	}
	out := map[plumbing.Hash]bool{}
	seen := map[plumbing.Hash]bool{}
	queue := append([]plumbing.Hash{}, wants...)
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if stop[h] || seen[h] {
			continue
		}
		seen[h] = true
		c, err := object.GetCommit(s, h)
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", h, err)
		}
		if err := commitObjects(s, c, out); err != nil {
			return nil, err
		}
		queue = append(queue, c.ParentHashes...)
	}
	list := make([]plumbing.Hash, 0, len(out))
	for h := range out {
		list = append(list, h)
	}
	return list, nil
}

// commitObjects adds to out the commit c and the objects its tree has
// that its first parent's has not.
func commitObjects(s storer.EncodedObjectStorer, c *object.Commit, out map[plumbing.Hash]bool) error {
	out[c.Hash] = true
	parentTree := plumbing.ZeroHash
	if len(c.ParentHashes) > 0 {
		pc, err := object.GetCommit(s, c.ParentHashes[0])
		if err != nil {
			return fmt.Errorf("commit %s: %w", c.ParentHashes[0], err)
		}
		parentTree = pc.TreeHash
	}
	if err := newObjects(s, parentTree, c.TreeHash, out); err != nil {
		return err
	}
	if c.TreeHash == emptyTree {
		out[emptyTree] = true
	}
	return nil
}

// advertise lists a repository's references and HEAD, as both sessions
// announce them.
func advertise(ctx context.Context, sto *filesystem.Storage) (*packp.AdvRefs, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ar := packp.NewAdvRefs()
	if err := ar.Capabilities.Set(capability.Agent, capability.DefaultAgent()); err != nil {
		return nil, err
	}
	if err := ar.Capabilities.Set(capability.OFSDelta); err != nil {
		return nil, err
	}
	iter, err := sto.IterReferences()
	if err != nil {
		return nil, err
	}
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			ar.References[ref.Name().String()] = ref.Hash()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if head, err := sto.Reference(plumbing.HEAD); err == nil && head.Type() == plumbing.SymbolicReference {
		if h, ok := ar.References[head.Target().String()]; ok {
			_ = ar.AddReference(head)
			ar.Head = &h
		}
	}
	return ar, nil
}

func (t fileTransport) NewReceivePackSession(ep *transport.Endpoint, _ transport.AuthMethod) (transport.ReceivePackSession, error) {
	dir, err := resolveGitDir(ep.Path)
	if err != nil {
		return nil, err
	}
	return &receiveSession{gitDir: dir, sto: openStorage(dir)}, nil
}

// resolveGitDir returns the git directory of a bare repository or of a
// working tree.
func resolveGitDir(p string) (string, error) {
	if fi, err := os.Stat(filepath.Join(p, "config")); err == nil && !fi.IsDir() {
		if _, err := os.Stat(filepath.Join(p, "objects")); err == nil {
			return p, nil
		}
	}
	dotgit := filepath.Join(p, ".git")
	if fi, err := os.Stat(filepath.Join(dotgit, "config")); err == nil && !fi.IsDir() {
		return dotgit, nil
	}
	return "", fmt.Errorf("%w: %s", transport.ErrRepositoryNotFound, p)
}

// openStorage opens a git directory keeping up to 64 pack files open
// between reads (go-git otherwise reopens the pack for every object), and
// reading each pack index in one go (see storageFS). Close releases them.
func openStorage(gitDir string) *filesystem.Storage {
	return filesystem.NewStorageWithOptions(storageFS{osfs.New(gitDir)}, cache.NewObjectLRUDefault(),
		filesystem.Options{MaxOpenDescriptors: 64, LargeObjectThreshold: largeObjectBytes})
}

// largeObjectBytes: a loose object over this size is returned unread (its
// content read when asked for), as go-git does for packed objects over 16
// KiB. IMPORTANT: writeWork relies on it to refuse a file over
// Options.MaxFileBytes from the object's size without reading it whole.
const largeObjectBytes = 1 << 20

// receiveSession is the in-process receive-pack.
type receiveSession struct {
	gitDir string
	sto    *filesystem.Storage
}

func (s *receiveSession) Close() error { return s.sto.Close() }

func (s *receiveSession) AdvertisedReferences() (*packp.AdvRefs, error) {
	return s.AdvertisedReferencesContext(context.Background())
}

func (s *receiveSession) AdvertisedReferencesContext(ctx context.Context) (*packp.AdvRefs, error) {
	ar, err := advertise(ctx, s.sto)
	if err != nil {
		return nil, err
	}
	if err := ar.Capabilities.Set(capability.ReportStatus); err != nil {
		return nil, err
	}
	return ar, nil
}

func (s *receiveSession) ReceivePack(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
	if req.Packfile != nil {
		defer req.Packfile.Close()
	}
	unlock, err := lockDir(s.gitDir)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", s.gitDir, err)
	}
	defer unlock()
	// Under the flock no other writer of ours is inside this repository:
	// a temporary file (tmp_obj_*, tmp_pack_*, agentos-tmp-*) was left by a
	// writer killed mid-push. Only those older than staleUpstreamAge are
	// removed: a git binary (not excluded by our flock) may be writing.
	// Lock files are not ours: they are left alone.
	cleanStale(s.gitDir, staleUpstreamAge, false)
	// The storage was opened before the lock: another process may have
	// merged the packs it listed since.
	_ = s.sto.Close()
	s.sto = openStorage(s.gitDir)

	rs := packp.NewReportStatus()
	rs.UnpackStatus = "ok"
	pw := newPackWriter(s.gitDir)
	if req.Packfile != nil {
		// ctx's end closes the pack, which ends the unpacking (cheaper
		// than go-git's context reader: a goroutine and a buffer per Read).
		stop := context.AfterFunc(ctx, func() { _ = req.Packfile.Close() })
		err := unpack(pw, req.Packfile)
		if !stop() && err != nil {
			err = fmt.Errorf("%w (%w)", context.Cause(ctx), err)
		}
		if err != nil {
			rs.UnpackStatus = err.Error()
			return rs, fmt.Errorf("unpack: %w", err)
		}
	}
	for _, cmd := range req.Commands {
		rs.CommandStatuses = append(rs.CommandStatuses, &packp.CommandStatus{
			ReferenceName: cmd.Name,
			Status:        s.update(cmd, pw),
		})
	}
	if req.Packfile != nil {
		mergeUpstreamPacks(s.gitDir)
	}
	return rs, nil
}

// mergeUpstreamPacks merges the packs of the local upstream gitDir when
// they pile up (see mergePacks; the caller holds the upstream's lock):
// each push is kept as the pack it arrived in. A merge that fails, or
// that readers put off, leaves every object readable and is tried again
// at the next push.
func mergeUpstreamPacks(gitDir string) {
	s := newStore(gitDir, nil)
	defer s.Close()
	if _, _, err := mergePacks(gitDir, s); err != nil {
		slog.Warn("git: merging the packs of a local upstream failed; its objects are intact", slog.String("upstream", gitDir), slog.String("err", err.Error()))
	}
}

// staleUpstreamAge is the age above which a temporary file in a local
// upstream is known to be left by a killed writer.
const staleUpstreamAge = 5 * time.Minute

// statusStale is the command status of an update whose old value is not
// the reference's current value (another writer pushed first).
const statusStale = "fetch first: the reference moved since it was advertised"

// checkCommit says why h cannot be a reference's new value, "" when it
// can: it MUST be a commit, of the pack just written (pw) or already
// stored.
func (s *receiveSession) checkCommit(h plumbing.Hash, pw *packWriter) string {
	ok, unknown := pw.commit(h)
	switch {
	case ok:
		return ""
	case !unknown:
		return "not a commit: " + h.String()
	}
	if _, err := s.sto.EncodedObject(plumbing.CommitObject, h); err != nil {
		return "missing object " + h.String()
	}
	return ""
}

// update applies one command: compare-and-swap, rename into place.
func (s *receiveSession) update(cmd *packp.Command, pw *packWriter) string {
	name := cmd.Name
	if !strings.HasPrefix(name.String(), "refs/") || name.Validate() != nil {
		return "invalid reference name"
	}
	cur := plumbing.ZeroHash
	if ref, err := s.sto.Reference(name); err == nil {
		cur = ref.Hash()
	} else if err != plumbing.ErrReferenceNotFound {
		return "cannot read reference: " + err.Error()
	}
	if cur != cmd.Old {
		return statusStale
	}
	if cmd.New.IsZero() {
		return "deleting references is not supported"
	}
	if status := s.checkCommit(cmd.New, pw); status != "" {
		return status
	}
	if err := writeRef(s.gitDir, name, cmd.New); err != nil {
		return "cannot write reference: " + err.Error()
	}
	return "ok"
}
