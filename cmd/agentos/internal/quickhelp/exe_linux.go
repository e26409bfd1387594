package quickhelp

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"strings"
)

// buildInfoMagic opens the .go.buildinfo section of a Go binary.
const buildInfoMagic = "\xff Go buildinf:"

// exeModinfo reads the build information the go command stored in this
// executable's .go.buildinfo section (Go 1.18's layout, which
// debug/buildinfo documents by reading it: a 32-byte header whose flags
// say the strings follow inline, then the Go version and the module
// information, each prefixed by its length as a uvarint, the latter
// between two 16-byte sentinels). ok false: it could not (another layout,
// no section); the command then answers the help itself.
func exeModinfo() (modinfo string, ok bool) {
	exe, err := os.Executable()
	if err != nil {
		return "", false
	}
	f, err := elf.Open(exe)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sec := f.Section(".go.buildinfo")
	if sec == nil || sec.Type == elf.SHT_NOBITS {
		return "", false
	}
	b, err := sec.Data()
	if err != nil {
		return "", false
	}
	return parseBuildInfo(b)
}

// parseBuildInfo is exeModinfo's reading of the section's bytes b.
func parseBuildInfo(b []byte) (string, bool) {
	const header, flagsInline = 32, 0x2
	if len(b) < header || string(b[:len(buildInfoMagic)]) != buildInfoMagic || b[15]&flagsInline == 0 {
		return "", false
	}
	b = b[header:]
	if _, b = uvarintString(b); b == nil {
		return "", false
	}
	mod, rest := uvarintString(b)
	if rest == nil {
		return "", false
	}
	// The sentinels: 16 bytes on each side, the text ending in a newline.
	if len(mod) < 33 || mod[len(mod)-17] != '\n' {
		return "", false // no module information: as runtime/debug.ReadBuildInfo, none
	}
	return strings.Clone(mod[16 : len(mod)-16]), true
}

// uvarintString reads a string prefixed by its length; rest nil: b is too
// short.
func uvarintString(b []byte) (s string, rest []byte) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return "", nil
	}
	return string(b[w : w+int(n)]), b[w+int(n):]
}
