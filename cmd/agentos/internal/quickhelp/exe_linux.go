package quickhelp

import (
	"io"
	"syscall"
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
//
// IMPORTANT: it reads the ELF file with its own few lines, not debug/elf
// or encoding/binary, which import reflect and fmt (see Fields).
func exeModinfo() (modinfo string, ok bool) {
	// Not os.Open: its first file starts the runtime's poller (an epoll
	// instance and its wake-up descriptor), which the help does not need.
	fd, err := syscall.Open("/proc/self/exe", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer syscall.Close(fd)
	b, ok := elfSection(preader(fd), ".go.buildinfo")
	if !ok {
		return "", false
	}
	return parseBuildInfo(b)
}

// preader reads the file descriptor at an offset (pread).
type preader int

func (fd preader) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := syscall.Pread(int(fd), b[n:], off+int64(n))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, io.ErrUnexpectedEOF
		}
		n += m
	}
	return n, nil
}

// elfSection returns the contents of the section called name in the
// 64-bit little-endian ELF file r (what linux/amd64 and linux/arm64
// build), ok false when r is no such file, has no such section, or it
// holds no bytes in the file.
func elfSection(r io.ReaderAt, name string) ([]byte, bool) {
	const (
		shdrSize  = 64
		maxShdrs  = 4096    // a Go binary has about 40
		maxTable  = 1 << 20 // the section names; the build information
		shtNobits = 8
	)
	h, ok := readAt(r, 0, 64)
	if !ok || string(h[:4]) != "\x7fELF" || h[4] != 2 || h[5] != 1 {
		return nil, false
	}
	shoff, shentsize, shnum, shstrndx := le(h[0x28:], 8), le(h[0x3a:], 2), le(h[0x3c:], 2), le(h[0x3e:], 2)
	if shentsize != shdrSize || shnum == 0 || shnum > maxShdrs || shstrndx >= shnum {
		return nil, false
	}
	sh, ok := readAt(r, shoff, shnum*shdrSize)
	if !ok {
		return nil, false
	}
	// section i's header: name offset at 0, type at 4, file offset at
	// 0x18, size at 0x20.
	hdr := func(i uint64) []byte { return sh[i*shdrSize : (i+1)*shdrSize] }
	names, ok := readAt(r, le(hdr(shstrndx)[0x18:], 8), min(le(hdr(shstrndx)[0x20:], 8), maxTable))
	if !ok {
		return nil, false
	}
	for i := range shnum {
		s := hdr(i)
		off := le(s, 4)
		if off >= uint64(len(names)) || le(s[4:], 4) == shtNobits {
			continue
		}
		if n, _, _ := cut(string(names[off:]), 0); n != name {
			continue
		}
		if le(s[0x20:], 8) > maxTable {
			return nil, false
		}
		return readAt(r, le(s[0x18:], 8), le(s[0x20:], 8))
	}
	return nil, false
}

// readAt reads n bytes at off, ok false unless it read them all.
func readAt(r io.ReaderAt, off, n uint64) ([]byte, bool) {
	if n > 1<<24 || off > 1<<62 {
		return nil, false
	}
	b := make([]byte, n)
	_, err := r.ReadAt(b, int64(off))
	return b, err == nil
}

// le decodes the n-byte little-endian unsigned integer at the start of b.
func le(b []byte, n int) uint64 {
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
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
	return mod[16 : len(mod)-16], true
}

// uvarintString reads a string prefixed by its length; rest nil: b is too
// short.
func uvarintString(b []byte) (s string, rest []byte) {
	n, w := uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return "", nil
	}
	return string(b[w : w+int(n)]), b[w+int(n):]
}

// uvarint decodes the unsigned varint (7 bits a byte, low first) at the
// start of b and its length in bytes; 0: b ends inside it or it overflows.
func uvarint(b []byte) (v uint64, w int) {
	for i, c := range b {
		if i == 10 {
			return 0, 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}
