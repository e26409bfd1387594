package promtext

import (
	"strings"
	"unicode/utf8"
)

// sanitizeName maps s to a valid metric name, [a-zA-Z_:][a-zA-Z0-9_:]*:
// every invalid rune (or invalid UTF-8 byte) becomes one '_', a leading digit
// gets a '_' prefix and the empty string becomes "_".
func sanitizeName(s string) string { return sanitize(s, true) }

// sanitizeLabel maps s to a valid label name, [a-zA-Z_][a-zA-Z0-9_]*, the
// same way as sanitizeName but without colons.
func sanitizeLabel(s string) string { return sanitize(s, false) }

func sanitize(s string, colon bool) string {
	if s == "" {
		return "_"
	}
	valid := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || colon && r == ':'
	}
	clean := true
	for _, r := range s {
		if !valid(r) {
			clean = false
			break
		}
	}
	if clean && !(s[0] >= '0' && s[0] <= '9') {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 1)
	if s[0] >= '0' && s[0] <= '9' {
		b.WriteByte('_')
	}
	for _, r := range s { // invalid UTF-8 bytes arrive as utf8.RuneError, one per byte
		if valid(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// unitSuffix returns the name suffix (without the leading '_') for an
// OpenTelemetry UCUM unit, or "" when the unit adds none.
func unitSuffix(unit string) string {
	unit = strings.TrimSpace(stripAnnotations(unit))
	if unit == "" || unit == "1" {
		return ""
	}
	num, den, per := strings.Cut(unit, "/")
	if !per {
		return unitWord(unit, unitNames)
	}
	n := ""
	if num = strings.TrimSpace(num); num != "1" {
		n = unitWord(num, unitNames)
	}
	d := unitWord(strings.TrimSpace(den), perUnitNames)
	switch {
	case d == "":
		return n
	case n == "":
		return "per_" + d
	default:
		return n + "_per_" + d
	}
}

// stripAnnotations removes UCUM annotations, "{...}", from unit.
func stripAnnotations(unit string) string {
	for {
		i := strings.IndexByte(unit, '{')
		if i < 0 {
			return unit
		}
		j := strings.IndexByte(unit[i:], '}')
		if j < 0 {
			return unit[:i]
		}
		unit = unit[:i] + unit[i+j+1:]
	}
}

// unitWord looks u up in table; an unknown unit is reduced to
// [a-zA-Z0-9_] with runs of other characters collapsed to one '_'.
func unitWord(u string, table map[string]string) string {
	if w, ok := table[u]; ok {
		return w
	}
	var b strings.Builder
	under := false
	for _, r := range u {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			if under && b.Len() > 0 {
				b.WriteByte('_')
			}
			under = false
			b.WriteRune(r)
		} else {
			under = true
		}
	}
	return b.String()
}

// unitNames maps common UCUM units to the words the OpenTelemetry→Prometheus
// conventions use.
var unitNames = map[string]string{
	// time
	"d":   "days",
	"h":   "hours",
	"min": "minutes",
	"s":   "seconds",
	"ms":  "milliseconds",
	"us":  "microseconds",
	"ns":  "nanoseconds",
	// bytes
	"By":   "bytes",
	"KiBy": "kibibytes",
	"MiBy": "mebibytes",
	"GiBy": "gibibytes",
	"TiBy": "tebibytes",
	"KBy":  "kilobytes",
	"MBy":  "megabytes",
	"GBy":  "gigabytes",
	"TBy":  "terabytes",
	// SI
	"m":   "meters",
	"V":   "volts",
	"A":   "amperes",
	"J":   "joules",
	"W":   "watts",
	"g":   "grams",
	"Cel": "celsius",
	"Hz":  "hertz",
	// misc
	"1": "",
	"%": "percent",
}

// perUnitNames maps the denominator of a rate unit ("By/s").
var perUnitNames = map[string]string{
	"s":  "second",
	"m":  "minute",
	"h":  "hour",
	"d":  "day",
	"w":  "week",
	"mo": "month",
	"y":  "year",
}
