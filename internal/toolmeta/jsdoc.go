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
	var p jsdoc
	for _, line := range strings.Split(c, "\n") {
		p.line(line)
	}
	p.endTag()
	return p.desc.String(), p.tags, p.params
}

// jsdoc is a JSDoc comment being parsed, line by line.
type jsdoc struct {
	desc    strings.Builder
	tags    []string
	seenTag map[string]bool
	params  map[string]string
	cur     string // the block tag whose text continues on the next line
	curText string // its text so far (for @param)
}

// line reads one line of the comment.
func (p *jsdoc) line(line string) {
	line = strings.TrimSpace(line)
	line = strings.TrimSpace(strings.TrimPrefix(line, "*"))
	if strings.Trim(line, "*") == "" {
		line = "" // a rule of stars
	}
	for i, seg := range splitTags(line) {
		if i == 0 && !strings.HasPrefix(seg, "@") {
			p.text(seg) // text before any tag on this line
			continue
		}
		p.endTag()
		p.blockTag(seg)
	}
}

// text is text outside a tag: the description's, or the current tag's.
func (p *jsdoc) text(seg string) {
	if p.cur == "" || p.cur == "description" {
		p.addDesc(seg)
	} else {
		p.curText += " " + seg
	}
}

// blockTag starts the block tag seg ("@tag a, b", "@param x - ...").
func (p *jsdoc) blockTag(seg string) {
	name, body := seg[1:], ""
	if j := strings.IndexFunc(name, unicode.IsSpace); j >= 0 {
		name, body = name[:j], strings.TrimSpace(name[j:])
	}
	switch strings.ToLower(name) {
	case "tag", "tags":
		p.addTags(body)
	case "description", "desc", "summary":
		p.addDesc(body)
		p.cur = "description"
	default:
		p.cur, p.curText = strings.ToLower(name), body
	}
}

// addDesc adds the words of s to the description.
func (p *jsdoc) addDesc(s string) {
	for _, w := range strings.Fields(inlineTags(s)) {
		if p.desc.Len() > 0 {
			p.desc.WriteByte(' ')
		}
		p.desc.WriteString(w)
	}
}

// addTags adds the tags s lists (comma or space separated), lowercased,
// each once.
func (p *jsdoc) addTags(s string) {
	for _, t := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		t = strings.ToLower(strings.TrimLeft(t, "#"))
		if t == "" || p.seenTag[t] {
			continue
		}
		if p.seenTag == nil {
			p.seenTag = map[string]bool{}
		}
		p.seenTag[t] = true
		p.tags = append(p.tags, t)
	}
}

// endTag ends the current block tag, keeping a @param's description.
func (p *jsdoc) endTag() {
	if p.cur == "param" || p.cur == "arg" || p.cur == "argument" {
		name, text := paramDoc(p.curText)
		if name != "" && text != "" {
			if p.params == nil {
				p.params = map[string]string{}
			}
			p.params[name] = text
		}
	}
	p.cur, p.curText = "", ""
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
