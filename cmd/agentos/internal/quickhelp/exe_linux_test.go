package quickhelp

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestExeModinfoIsTheBuildInformation: what the help reads from its own
// executable is, byte for byte, the build information runtime/debug
// gives (the go command stores BuildInfo.String's text, the Go version
// apart).
func TestExeModinfoIsTheBuildInformation(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("this test binary has no build information")
	}
	mi, ok := exeModinfo()
	if !ok {
		t.Fatal("exeModinfo found no build information in this executable")
	}
	// The go line is runtime/debug's: the Go version is stored apart.
	if got, want := "go\t"+runtime.Version()+"\n"+mi, bi.String(); got != want {
		t.Fatalf("exeModinfo:\n%s\nruntime/debug:\n%s", got, want)
	}
}

// TestParseBuildInfoRefusesWhatItCannotRead: a section too short, of
// another magic or layout (strings by address), or cut inside a string
// is no build information.
func TestParseBuildInfoRefusesWhatItCannotRead(t *testing.T) {
	head := []byte(buildInfoMagic + "\x08\x02")
	head = append(head, make([]byte, 32-len(head))...)
	whole := append(append([]byte{}, head...), 4, 'g', 'o', '1', '.')
	for name, b := range map[string][]byte{
		"empty":       nil,
		"short":       head[:20],
		"magic":       append([]byte("\xff Go buildinX"), head[14:]...),
		"by address":  append(append([]byte{}, head[:15]...), append([]byte{0}, head[16:]...)...),
		"cut version": whole[:len(whole)-1],
		"no modinfo":  append(append([]byte{}, whole...), 0),
	} {
		if mi, ok := parseBuildInfo(b); ok {
			t.Errorf("%s: parseBuildInfo = %q, true", name, mi)
		}
	}
}

// TestFields: the version (the link-time one first, then the main
// module's), the revision and the modified flag, quoted settings
// included; no build information is "unknown".
func TestFields(t *testing.T) {
	mi := "go\tgo1.26.0\npath\tgithub.com/agentos-run/agentos/cmd/agentos\n" +
		"mod\tgithub.com/agentos-run/agentos\tv0.0.0-20261203-abcdef012345+dirty\t\n" +
		"dep\tgo.etcd.io/bbolt\tv1.5.0\th1:x=\n" +
		"build\t-ldflags=\"-s -w\"\nbuild\t\"odd key\"=\"a b\"\n" +
		"build\tvcs=git\nbuild\tvcs.revision=abcdef0123456789abcdef0123456789abcdef01\nbuild\tvcs.modified=true\n"
	v, c, m := Fields(mi, true)
	if v != "v0.0.0-20261203-abcdef012345+dirty" || c != "abcdef0123456789abcdef0123456789abcdef01" || !m {
		t.Errorf("Fields = %q, %q, %v", v, c, m)
	}
	if v, c, m := Fields("", false); v != "unknown" || c != "" || m {
		t.Errorf("Fields without build information = %q, %q, %v", v, c, m)
	}
	Version = "v1.2.3"
	defer func() { Version = "" }()
	if v, _, _ := Fields(mi, true); v != "v1.2.3" {
		t.Errorf("with Version set at link time: %q", v)
	}
}
