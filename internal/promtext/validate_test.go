package promtext

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// validateExposition is an independent parser of the text format 0.0.4 that
// checks the invariants Write promises: valid UTF-8, one HELP and TYPE per
// family before its samples, families sorted and not repeated, sample names
// belonging to their family, valid label names and escapes, no duplicate
// label names, no duplicate series, parseable values, histogram buckets
// ending with le="+Inf" and cumulative.
func validateExposition(text string) error {
	if text == "" {
		return nil
	}
	if !utf8.ValidString(text) {
		return fmt.Errorf("output is not valid UTF-8")
	}
	if !strings.HasSuffix(text, "\n") {
		return fmt.Errorf("output does not end with a newline")
	}
	var (
		fam, typ   string
		seenFam    = map[string]bool{}
		seenSeries = map[string]bool{}
		lastFam    string
		helpFor    string
		lastBucket = map[string]float64{} // series without le → last cumulative count
		sawInf     = map[string]bool{}
	)
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		errf := func(format string, a ...any) error {
			return fmt.Errorf("line %d %q: %s", n+1, line, fmt.Sprintf(format, a...))
		}
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name, help, ok := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			if !ok || !metricNameRE.MatchString(name) {
				return errf("bad HELP")
			}
			if seenFam[name] || helpFor == name {
				return errf("second HELP for family")
			}
			if err := checkEscapes(help, false); err != nil {
				return errf("%v", err)
			}
			helpFor = name
		case strings.HasPrefix(line, "# TYPE "):
			name, t, ok := strings.Cut(strings.TrimPrefix(line, "# TYPE "), " ")
			if !ok || !metricNameRE.MatchString(name) {
				return errf("bad TYPE")
			}
			switch t {
			case "counter", "gauge", "histogram", "summary":
			default:
				return errf("unknown type %q", t)
			}
			if seenFam[name] {
				return errf("family repeated")
			}
			if helpFor != "" && helpFor != name {
				return errf("HELP for %q not followed by its TYPE", helpFor)
			}
			if lastFam != "" && name <= lastFam {
				return errf("families not sorted: %q after %q", name, lastFam)
			}
			seenFam[name], fam, typ, lastFam, helpFor = true, name, t, name, ""
		case strings.HasPrefix(line, "#"):
			return errf("unexpected comment")
		default:
			if fam == "" {
				return errf("sample before any TYPE")
			}
			name, labels, value, err := parseSample(line)
			if err != nil {
				return errf("%v", err)
			}
			suffix, ok := strings.CutPrefix(name, fam)
			if !ok {
				return errf("sample outside family %q", fam)
			}
			allowed := map[string][]string{
				"counter":   {""},
				"gauge":     {""},
				"histogram": {"_bucket", "_sum", "_count"},
				"summary":   {"", "_sum", "_count"},
			}[typ]
			found := false
			for _, a := range allowed {
				found = found || a == suffix
			}
			if !found {
				return errf("suffix %q not allowed for %s", suffix, typ)
			}
			if typ == "counter" && !strings.HasSuffix(fam, "_total") {
				return errf("counter family without _total")
			}
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return errf("bad value: %v", err)
			}
			key := name + "{"
			base := ""
			le := ""
			for _, l := range labels {
				key += l[0] + "=" + l[1] + ","
				if l[0] == "le" && suffix == "_bucket" {
					le = l[1]
				} else {
					base += l[0] + "=" + l[1] + ","
				}
			}
			if seenSeries[key] {
				return errf("duplicate series")
			}
			seenSeries[key] = true
			if typ == "histogram" && suffix == "_bucket" {
				if le == "" {
					return errf("bucket without le")
				}
				if sawInf[base] {
					return errf("bucket after +Inf")
				}
				if prev, ok := lastBucket[base]; ok && v < prev {
					return errf("buckets not cumulative")
				}
				lastBucket[base] = v
				sawInf[base] = le == "+Inf"
			}
			if typ == "histogram" && suffix == "_count" && !sawInf[base] {
				return errf("_count without a preceding +Inf bucket")
			}
		}
	}
	if helpFor != "" {
		return fmt.Errorf("HELP for %q without TYPE", helpFor)
	}
	return nil
}

func parseSample(line string) (name string, labels [][2]string, value string, err error) {
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return "", nil, "", fmt.Errorf("no value")
	}
	name = line[:i]
	if !metricNameRE.MatchString(name) {
		return "", nil, "", fmt.Errorf("bad metric name %q", name)
	}
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		seen := map[string]bool{}
		for {
			eq := strings.IndexByte(rest, '=')
			if eq < 0 {
				return "", nil, "", fmt.Errorf("label without '='")
			}
			ln := rest[:eq]
			if !labelNameRE.MatchString(ln) {
				return "", nil, "", fmt.Errorf("bad label name %q", ln)
			}
			if seen[ln] {
				return "", nil, "", fmt.Errorf("duplicate label %q", ln)
			}
			seen[ln] = true
			rest = rest[eq+1:]
			if rest == "" || rest[0] != '"' {
				return "", nil, "", fmt.Errorf("label value not quoted")
			}
			rest = rest[1:]
			var val strings.Builder
			for {
				if rest == "" {
					return "", nil, "", fmt.Errorf("unterminated label value")
				}
				c := rest[0]
				if c == '"' {
					rest = rest[1:]
					break
				}
				if c == '\\' {
					if len(rest) < 2 || !strings.ContainsRune(`\"n`, rune(rest[1])) {
						return "", nil, "", fmt.Errorf("bad escape in label value")
					}
					val.WriteByte(rest[1])
					rest = rest[2:]
					continue
				}
				val.WriteByte(c)
				rest = rest[1:]
			}
			labels = append(labels, [2]string{ln, val.String()})
			if rest != "" && rest[0] == ',' {
				rest = rest[1:]
				continue
			}
			if rest == "" || rest[0] != '}' {
				return "", nil, "", fmt.Errorf("labels not closed")
			}
			rest = rest[1:]
			break
		}
	}
	value, ok := strings.CutPrefix(rest, " ")
	if !ok || value == "" || strings.ContainsAny(value, " \t") {
		return "", nil, "", fmt.Errorf("bad value part %q (timestamps are never written)", rest)
	}
	if f, err := strconv.ParseFloat(value, 64); err == nil && (math.IsInf(f, 0) && value != "+Inf" && value != "-Inf" || math.IsNaN(f) && value != "NaN") {
		return "", nil, "", fmt.Errorf("non-canonical special value %q", value)
	}
	return name, labels, value, nil
}

// checkEscapes reports escapes other than \\ and \n (and \" when quoted).
func checkEscapes(s string, quoted bool) error {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if i+1 >= len(s) {
			return fmt.Errorf("trailing backslash")
		}
		switch s[i+1] {
		case '\\', 'n':
		case '"':
			if !quoted {
				return fmt.Errorf(`\" in HELP`)
			}
		default:
			return fmt.Errorf("bad escape \\%c", s[i+1])
		}
		i++
	}
	return nil
}
