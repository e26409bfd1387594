package repo

import (
	"errors"
	"io"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// packWriter writes packs into a git directory through go-git's DotGit
// and keeps the index of each: go-git's ObjectStorage.PackfileWriter
// first loads the index of every pack already there (17 of them for a
// push into an upstream whose packs are about to be merged), and a
// receive needs only the pushed pack's, to check the commits the pushed
// references name.
type packWriter struct {
	fs    billy.Filesystem
	dir   *dotgit.DotGit
	packs map[plumbing.Hash]*idxfile.MemoryIndex // by pack checksum
}

func newPackWriter(gitDir string) *packWriter {
	fs := storageFS{osfs.New(gitDir)}
	return &packWriter{fs: fs, dir: dotgit.New(fs), packs: map[plumbing.Hash]*idxfile.MemoryIndex{}}
}

// PackfileWriter returns a writer of one pack (see storer.PackfileWriter).
func (p *packWriter) PackfileWriter() (io.WriteCloser, error) {
	w, err := p.dir.NewObjectPack()
	if err != nil {
		return nil, err
	}
	w.Notify = func(sum plumbing.Hash, iw *idxfile.Writer) {
		if idx, err := iw.Index(); err == nil {
			p.packs[sum] = idx // else commit asks the store
		}
	}
	return w, nil
}

// Filesystem is the git directory's (see packTemps).
func (p *packWriter) Filesystem() billy.Filesystem { return p.fs }

// commit says whether a pack written holds h as a commit; unknown is true
// when that cannot be told from the packs written (h is in none of those
// whose index was kept, or its type could not be read): the store must be
// asked.
func (p *packWriter) commit(h plumbing.Hash) (ok, unknown bool) {
	for sum, idx := range p.packs {
		if in, _ := idx.Contains(h); !in {
			continue
		}
		t, err := p.objectType(sum, idx, h)
		return err == nil && t == plumbing.CommitObject, err != nil
	}
	return false, true
}

// objectType reads the type of the object h of the pack sum.
func (p *packWriter) objectType(sum plumbing.Hash, idx *idxfile.MemoryIndex, h plumbing.Hash) (t plumbing.ObjectType, err error) {
	f, err := p.dir.ObjectPack(sum)
	if err != nil {
		return plumbing.InvalidObject, err
	}
	pf := packfile.NewPackfile(idx, p.fs, f, largeObjectBytes)
	defer func() { err = errors.Join(err, pf.Close()) }()
	o, err := pf.Get(h)
	if err != nil {
		return plumbing.InvalidObject, err
	}
	return o.Type(), nil
}
