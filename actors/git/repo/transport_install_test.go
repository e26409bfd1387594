package repo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// freshProcessEnv marks the re-executed test binary of
// TestTransportInstalledByFirstCall.
const freshProcessEnv = "AGENTOS_REPO_FRESH_PROCESS"

// TestTransportInstalledByFirstCall: importing the package changes nothing
// in go-git (no init() side effect); the in-process "file" transport is
// installed by the package's first entry point (here InitBare), explicitly.
// It runs in a fresh process (this test binary re-executed with only this
// test), because other tests of this binary have installed it already.
func TestTransportInstalledByFirstCall(t *testing.T) {
	if os.Getenv(freshProcessEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTransportInstalledByFirstCall$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), freshProcessEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestTransportInstalledByFirstCall") {
			t.Fatalf("the fresh process failed (%v):\n%s", err, out)
		}
		return
	}
	if _, ours := client.Protocols["file"].(fileTransport); ours {
		t.Fatal(`importing the package installed its "file" transport: it must be installed by an explicit call`)
	}
	if err := InitBare(filepath.Join(t.TempDir(), "up.git"), "main"); err != nil {
		t.Fatal(err)
	}
	if _, ours := client.Protocols["file"].(fileTransport); !ours {
		t.Fatalf(`after InitBare, go-git's "file" transport is %T, not this package's in-process one`, client.Protocols["file"])
	}
	InstallTransport() // idempotent
	if _, ours := client.Protocols["file"].(fileTransport); !ours {
		t.Fatal("a second InstallTransport replaced the transport")
	}
}
