package workerside

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime/debug"
	"strings"
	"sync"
)

// stamp, set at link time (go build -ldflags "-X
// github.com/agentos-run/agentos/actors/executor/internal/workerside.stamp=v1.2.3"),
// names the build when the version control information cannot: a release
// built outside a clean Git checkout. Empty: the build is named from what
// Go records in the binary (BuildID). The ID of a binary file is read from
// the -ldflags Go records in it (stampOf), so both agree.
var stamp string

// stampFlag is how the stamp appears in the recorded -ldflags.
const stampFlag = "/actors/executor/internal/workerside.stamp="

// Build names the build a program is: two programs with the same trusted
// ID were built from the same sources by the same toolchain.
type Build struct {
	// ID is a hash of the link-time stamp, or else of the toolchain, the
	// main module's path, version and sum, and its VCS revision, time and
	// whether the tree was modified.
	ID string
	// Trusted says that ID really names the sources: a stamp, a module
	// version (go install module@version), or a clean VCS revision. A
	// modified tree's builds, or one without VCS information, share one ID
	// whatever their sources, so it MUST NOT be used to match binaries.
	Trusted bool
	// Why, when not Trusted, says what is missing.
	Why string
}

// BuildID returns this program's Build (computed once).
var BuildID = sync.OnceValue(func() Build {
	if stamp != "" {
		return Build{ID: digest("stamp", stamp), Trusted: true}
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Build{Why: "the binary carries no build information"}
	}
	return BuildOf(bi)
})

// stampOf returns the stamp set by -X in bi's recorded -ldflags, or "".
func stampOf(bi *debug.BuildInfo) string {
	for _, s := range bi.Settings {
		if s.Key != "-ldflags" {
			continue
		}
		_, rest, ok := strings.Cut(s.Value, stampFlag)
		if !ok {
			return ""
		}
		v, _, _ := strings.Cut(rest, " ")
		return strings.Trim(v, `"'`)
	}
	return ""
}

// BuildOf names the build bi describes: this program's (BuildID), or
// another program's read from its file (debug/buildinfo, which the parent
// uses; the worker does not link it).
func BuildOf(bi *debug.BuildInfo) Build {
	if s := stampOf(bi); s != "" {
		return Build{ID: digest("stamp", s), Trusted: true}
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		if strings.HasPrefix(s.Key, "vcs.") {
			vcs[s.Key] = s.Value
		}
	}
	b := Build{ID: digest(bi.GoVersion, bi.Main.Path, bi.Main.Version, bi.Main.Sum,
		vcs["vcs.revision"], vcs["vcs.time"], vcs["vcs.modified"])}
	switch {
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		b.Trusted = true
	case vcs["vcs.revision"] == "":
		b.Why = "built without version control information (not from a Git checkout, or -buildvcs=false)"
	case vcs["vcs.modified"] == "true":
		b.Why = "built from a modified tree (uncommitted changes): its ID does not name its sources"
	default:
		b.Trusted = true
	}
	return b
}

// digest hashes parts, each length-prefixed, to a short hex string.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte{byte(len(p) >> 8), byte(len(p))})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
