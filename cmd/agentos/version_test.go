package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

func TestVersionJSON(t *testing.T) {
	code, out, errOut := cli(t, "version", "--json", "--root", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	var info versionInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if info.Version == "" || !strings.HasPrefix(info.Go, "go") || info.Module != "github.com/agentos-run/agentos" || info.Isolation != "process" {
		t.Fatalf("%+v", info)
	}
	p := info.Protections
	if p == nil || p.Mode != "best_effort" || !p.RlimitAS.Active {
		t.Fatalf("protections: %+v (%s)", p, info.ProtectionsError)
	}
	// What the worker measured, not what the kernel version suggests: on a
	// kernel with Landlock, every layer is in force.
	if abi := landlockABI(); abi > 0 && (!p.Complete() || p.Landlock.ABI < 1 || len(info.DeniedSyscalls) != p.Seccomp.Denied) {
		t.Fatalf("Landlock ABI %d here, yet: %+v, %d denied syscalls listed", abi, p, len(info.DeniedSyscalls))
	}
}

func TestVersionText(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, errOut := cli(t, append(args, "--root", t.TempDir())...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errOut)
		}
		for _, want := range []string{"agentos ", "confine: best_effort", "rlimit_as", "landlock", "seccomp", "no_new_privs"} {
			if !strings.Contains(out, want) {
				t.Fatalf("%v: no %q in:\n%s", args, want, out)
			}
		}
		if landlockABI() > 0 && strings.Contains(out, "INACTIVE") {
			t.Fatalf("%v: a layer is inactive on a kernel with Landlock:\n%s", args, out)
		}
	}
}

// TestVersionUsesTheRootSettings: the probe runs a worker as the tool
// root would, and says so when its agentos.json cannot be used.
func TestVersionUsesTheRootSettings(t *testing.T) {
	root := t.TempDir()
	write := func(cfg string) {
		if err := os.WriteFile(filepath.Join(root, "agentos.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"confine": "off"}`)
	code, out, _ := cli(t, "version", "--root", root)
	if code != exitOK || !strings.Contains(out, "confine: off") || !strings.Contains(out, "landlock      INACTIVE: confinement is off") {
		t.Fatalf("exit %d:\n%s", code, out)
	}

	write(`{"isolation": "inprocess"}`)
	code, out, _ = cli(t, "version", "--root", root)
	if code != exitOK || !strings.Contains(out, "isolation: inprocess") {
		t.Fatalf("exit %d:\n%s", code, out)
	}

	write(`{"confine": "strict"}`)
	code, out, _ = cli(t, "version", "--json", "--root", root)
	var info versionInfo
	if err := json.Unmarshal([]byte(out), &info); code != exitOK || err != nil || !strings.Contains(info.ConfigError, `confine "strict" is not known`) || info.Protections == nil {
		t.Fatalf("exit %d (%v):\n%s", code, err, out)
	}

	if code, _, errOut := cli(t, "version", "extra"); code != exitUsage || !strings.Contains(errOut, "takes no arguments") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
