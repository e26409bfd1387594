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
	if base, digits := radix(s); base != 10 {
		return parseRadix(digits, base)
	}
	return parseDecimal(s)
}

// radixPrefixes are the bases of the 0x, 0o and 0b prefixes.
var radixPrefixes = map[byte]int{'x': 16, 'X': 16, 'o': 8, 'O': 8, 'b': 2, 'B': 2}

// radix is the base of the integer literal s and its digits after any
// prefix (a legacy octal 017 has base 8).
func radix(s string) (base int, digits string) {
	if len(s) < 2 || s[0] != '0' {
		return 10, s
	}
	if b, ok := radixPrefixes[s[1]]; ok {
		return b, s[2:]
	}
	if strings.Trim(s, "01234567") == "" {
		return 8, s[1:] // legacy octal
	}
	return 10, s
}

// parseRadix parses the digits of an integer literal in base (of any size).
func parseRadix(digits string, base int) (float64, bool) {
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

// parseDecimal parses a decimal literal as JavaScript writes it (a value
// beyond float64 is infinite, as in JavaScript).
func parseDecimal(s string) (float64, bool) {
	if strings.ContainsAny(s, "xXpP") || strings.EqualFold(s, "inf") || strings.EqualFold(s, "infinity") || strings.EqualFold(s, "nan") {
		return 0, false // not JavaScript decimal syntax
	}
	f, err := strconv.ParseFloat(s, 64)
	if err == nil {
		return f, true
	}
	if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
		return f, !math.IsNaN(f)
	}
	return 0, false
}
