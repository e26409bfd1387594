// Package units writes quantities for people: sizes in KiB, MiB and GiB,
// counts with the right plural.
package units

import (
	"fmt"
	"strconv"
)

// Bytes writes a size in bytes the way a person reads it: "256 MiB",
// "1.5 KiB", "64 GiB", "100 bytes", "1 byte". Whole multiples print without
// decimals; others with one (rounded).
func Bytes(n int64) string {
	if n < 0 {
		return "-" + Bytes(-n)
	}
	const unit = 1024
	if n < unit {
		return Plural(n, "byte", "bytes")
	}
	names := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, i := float64(n)/unit, 0
	for v >= unit && i < len(names)-1 {
		v /= unit
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), names[i])
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + names[i]
}

// Plural writes n and the noun that agrees with it: "1 error", "2 errors",
// "0 errors".
func Plural[N ~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
