package toolmeta

import (
	"strings"
	"unicode"

	"github.com/agentos-run/agentos/internal/lazyre"
)

// parseJSDoc splits a /** ... */ comment into its description (the text
// outside block tags, whitespace collapsed), its tags (@tag / @tags lines,
// comma or space separated, lowercased, deduplicated) and the descriptions
// of `@param name description` tags by parameter name.
//
// A block tag starts at an @ that begins a line or follows a space. A @tag
// line ends at the end of its line; other block tags (@param, @returns,
// @example ...) run until the next block tag, as JSDoc says, so their text
// never leaks into the description.
func parseJSDoc(c string) (desc string, tags []string, params map[string]string) {
	c = strings.TrimPrefix(c, "/**")
	c = strings.TrimSuffix(c, "*/")
	var d strings.Builder
	addDesc := func(s string) {
		s = inlineTags(s)
		for _, w := range strings.Fields(s) {
			if d.Len() > 0 {
				d.WriteByte(' ')
			}
			d.WriteString(w)
		}
	}
	seenTag := map[string]bool{}
	addTags := func(s string) {
		for _, t := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			t = strings.ToLower(strings.TrimLeft(t, "#"))
			if t != "" && !seenTag[t] {
				seenTag[t] = true
				tags = append(tags, t)
			}
		}
	}
	cur := ""          // the block tag whose text continues on the next line
	var curText string // its text so far (for @param)
	endTag := func() {
		if cur == "param" || cur == "arg" || cur == "argument" {
			name, text := paramDoc(curText)
			if name != "" && text != "" {
				if params == nil {
					params = map[string]string{}
				}
				params[name] = text
			}
		}
		cur, curText = "", ""
	}
	for _, line := range strings.Split(c, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimPrefix(line, "*"))
		if strings.Trim(line, "*") == "" {
			line = "" // a rule of stars
		}
		segs := splitTags(line)
		for i, seg := range segs {
			if i == 0 && !strings.HasPrefix(seg, "@") {
				// Text before any tag on this line.
				if cur == "" || cur == "description" {
					addDesc(seg)
				} else {
					curText += " " + seg
				}
				continue
			}
			endTag()
			name, body := seg[1:], ""
			if j := strings.IndexFunc(name, unicode.IsSpace); j >= 0 {
				name, body = name[:j], strings.TrimSpace(name[j:])
			}
			switch strings.ToLower(name) {
			case "tag", "tags":
				addTags(body)
			case "description", "desc", "summary":
				addDesc(body)
				cur = "description"
			default:
				cur, curText = strings.ToLower(name), body
			}
		}
	}
	endTag()
	return d.String(), tags, params
}

// splitTags splits a JSDoc line before each block tag: an @ at the start or
// after a space, followed by a letter (`a@b.com` and `{@link x}` are text).
func splitTags(line string) []string {
	var segs []string
	start := 0
	for i := 0; i < len(line); i++ {
		if line[i] != '@' || i+1 >= len(line) || !isASCIILetter(line[i+1]) {
			continue
		}
		if i > 0 && line[i-1] != ' ' && line[i-1] != '\t' {
			continue
		}
		if s := strings.TrimSpace(line[start:i]); s != "" {
			segs = append(segs, s)
		}
		start = i
	}
	if s := strings.TrimSpace(line[start:]); s != "" {
		segs = append(segs, s)
	}
	return segs
}

func isASCIILetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

var inlineTagRE = lazyre.New(`\{@\w+\s+([^}|]*?)(?:\s*\|\s*([^}]*))?\}`)

// inlineTags replaces {@link target|label} by its label (or target).
func inlineTags(s string) string {
	if !strings.Contains(s, "{@") {
		return s
	}
	return inlineTagRE().ReplaceAllStringFunc(s, func(m string) string {
		sm := inlineTagRE().FindStringSubmatch(m)
		if sm[2] != "" {
			return sm[2]
		}
		return sm[1]
	})
}

// paramDoc splits a @param body "{type} args.n - the index" into its name
// and description. Optional names ([args.n=1]) are unwrapped.
func paramDoc(s string) (name, text string) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") {
		depth := 0
		for i, r := range s {
			if r == '{' {
				depth++
			} else if r == '}' {
				depth--
				if depth == 0 {
					s = strings.TrimSpace(s[i+1:])
					break
				}
			}
		}
		if depth != 0 {
			return "", ""
		}
	}
	name, text, _ = strings.Cut(s, " ")
	name = strings.Trim(name, "[]")
	if i := strings.IndexByte(name, '='); i >= 0 {
		name = name[:i]
	}
	text = strings.TrimSpace(text)
	text = strings.TrimSpace(strings.TrimPrefix(text, "-"))
	return name, strings.Join(strings.Fields(text), " ")
}
