package check

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// parseNumber returns the value of a JavaScript numeric literal: decimal
// with fraction and exponent, 0x/0o/0b prefixes, legacy octal (017),
// numeric separators (1_000) and the BigInt suffix (42n). Values past
// float64 saturate to ±Inf. ok is false for text that is not a number.
func parseNumber(s string) (v float64, ok bool) {
	s = strings.TrimSuffix(s, "n")
	if strings.IndexByte(s, '_') >= 0 {
		s = strings.ReplaceAll(s, "_", "")
	}
	if s == "" {
		return 0, false
	}
	base := 10
	digits := s
	if len(s) > 1 && s[0] == '0' {
		switch s[1] {
		case 'x', 'X':
			base, digits = 16, s[2:]
		case 'o', 'O':
			base, digits = 8, s[2:]
		case 'b', 'B':
			base, digits = 2, s[2:]
		default:
			if strings.Trim(s, "01234567") == "" {
				base, digits = 8, s[1:] // legacy octal
			}
		}
	}
	if base != 10 {
		if digits == "" {
			return 0, false
		}
		if u, err := strconv.ParseUint(digits, base, 64); err == nil {
			return float64(u), true
		}
		b, ok := new(big.Int).SetString(digits, base)
		if !ok {
			return 0, false
		}
		f, _ := new(big.Float).SetInt(b).Float64()
		return f, true
	}
	if strings.ContainsAny(s, "xXpP") || strings.EqualFold(s, "inf") || strings.EqualFold(s, "infinity") || strings.EqualFold(s, "nan") {
		return 0, false // not JavaScript decimal syntax
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
			return f, !math.IsNaN(f)
		}
		return 0, false
	}
	return f, true
}
