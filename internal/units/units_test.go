package units

import "testing"

func TestBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 bytes"}, {1, "1 byte"}, {1023, "1023 bytes"}, {1024, "1 KiB"}, {1536, "1.5 KiB"},
		{256 << 20, "256 MiB"}, {1 << 36, "64 GiB"}, {4 << 20, "4 MiB"}, {-2048, "-2 KiB"},
		{1<<20 + 1, "1.0 MiB"},
	} {
		if got := Bytes(tc.n); got != tc.want {
			t.Errorf("Bytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 errors"}, {1, "1 error"}, {2, "2 errors"}} {
		if got := Plural(tc.n, "error", "errors"); got != tc.want {
			t.Errorf("Plural(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
