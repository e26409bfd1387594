package driver

import "strings"

// The statement boundary of SQLite text, found the way SQLite finds it.
//
// sqlite3_prepare compiles the first statement of a text and reports where
// it ended; modernc.org/sqlite then runs every following statement itself,
// which is how "SELECT 1; DROP TABLE t" ran whole. The driver does not expose
// that tail, so splitStatement computes the same boundary with the state
// machine of SQLite's sqlite3_complete (src/complete.c): a statement ends at
// a semicolon outside string and blob literals, quoted identifiers and
// comments, except inside a CREATE TRIGGER body, which ends at ";END;".
// Only the first statement is ever handed to SQLite; the rest must be
// blanks, comments and semicolons, or the call is refused.
//
// Why this cannot let a second statement through: the parser and this
// machine tokenize literals and comments alike, and the only place they
// could disagree is a trigger body. There the machine waits for END
// followed by a semicolon, which is also the only way the parser can finish
// a trigger, so the machine never ends a statement later than the parser.
// When it ends one earlier, the text handed to SQLite is an incomplete
// statement (a syntax error, nothing runs) or the remainder is not blank
// (refused before anything runs).

// sqlToken is one token class of the sqlite3_complete machine.
type sqlToken uint8

const (
	tokSemi sqlToken = iota
	tokWS
	tokOther
	tokExplain
	tokCreate
	tokTemp
	tokTrigger
	tokEnd
)

// sqlTrans is sqlite3_complete's transition table: state x token -> state.
// States: 0 nothing seen, 1 start (between statements), 2 normal, 3 after
// EXPLAIN, 4 after CREATE [TEMP], 5 in a trigger, 6 semicolon in a trigger,
// 7 ";END" in a trigger.
var sqlTrans = [8][8]uint8{
	//  SEMI WS OTHER EXPLAIN CREATE TEMP TRIGGER END
	{1, 0, 2, 3, 4, 2, 2, 2}, // 0 nothing
	{1, 1, 2, 3, 4, 2, 2, 2}, // 1 start
	{1, 2, 2, 2, 2, 2, 2, 2}, // 2 normal
	{1, 3, 3, 2, 4, 2, 2, 2}, // 3 explain
	{1, 4, 2, 2, 2, 4, 5, 2}, // 4 create
	{6, 5, 5, 5, 5, 5, 5, 5}, // 5 trigger
	{6, 6, 5, 5, 5, 5, 5, 7}, // 6 semi in a trigger
	{1, 7, 5, 5, 5, 5, 5, 5}, // 7 ";END" in a trigger
}

// sqlIDChar reports whether b may be part of an unquoted SQLite identifier
// or keyword (SQLite's IdChar: letters, digits, '_', '$', and every byte of
// a multi-byte UTF-8 sequence).
func sqlIDChar(b byte) bool {
	return b >= 0x80 || b == '_' || b == '$' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// nextSQLToken reads the token of s at i: its class, where it ends, and
// false when s ends inside a literal, a quoted identifier or a block comment
// (the token then runs to the end of s).
func nextSQLToken(s string, i int) (tok sqlToken, end int, closed bool) {
	switch c := s[i]; {
	case c == ';':
		return tokSemi, i + 1, true
	case strings.IndexByte(" \t\n\r\f", c) >= 0:
		return tokWS, i + 1, true
	case strings.HasPrefix(s[i:], "/*"):
		end, closed = closedBy(s, i+2, "*/")
		return tokWS, end, closed
	case strings.HasPrefix(s[i:], "--"):
		end, _ = closedBy(s, i+2, "\n")
		return tokWS, end, true // a line comment may end the text
	case sqlClosers[c] != "":
		end, closed = closedBy(s, i+1, sqlClosers[c])
		return tokOther, end, closed
	case sqlIDChar(c):
		j := i + 1
		for j < len(s) && sqlIDChar(s[j]) {
			j++
		}
		return sqlKeyword(s[i:j]), j, true
	}
	return tokOther, i + 1, true
}

// sqlClosers maps the opening quote of a literal or quoted identifier to
// its closing one.
var sqlClosers = map[byte]string{'[': "]", '`': "`", '"': `"`, '\'': "'"}

// closedBy returns the end of a token closed by closer, searched from i,
// and true; len(s) and false when s ends first.
func closedBy(s string, i int, closer string) (int, bool) {
	if j := strings.Index(s[i:], closer); j >= 0 {
		return i + j + len(closer), true
	}
	return len(s), false
}

// sqlKeywords are the words the sqlite3_complete machine tells apart.
var sqlKeywords = []struct {
	word string
	tok  sqlToken
}{
	{"create", tokCreate}, {"trigger", tokTrigger}, {"temp", tokTemp}, {"temporary", tokTemp}, {"end", tokEnd}, {"explain", tokExplain},
}

// sqlKeyword returns the token class of the word w (any case).
func sqlKeyword(w string) sqlToken {
	for _, k := range sqlKeywords {
		if strings.EqualFold(w, k.word) {
			return k.tok
		}
	}
	return tokOther
}

// skipSQLBlanks returns the first position at or after i that is not a
// blank, a comment or a semicolon.
func skipSQLBlanks(s string, i int) int {
	for i < len(s) {
		tok, end, _ := nextSQLToken(s, i)
		if tok != tokWS && tok != tokSemi {
			return i
		}
		i = end
	}
	return i
}

// splitStatement returns the first statement of src, from its first token
// to its closing semicolon (leading blanks, comments and empty statements
// dropped), and whether anything but blanks, comments and semicolons
// follows it. An empty first means src holds no statement at all.
func splitStatement(src string) (first string, more bool) {
	start := skipSQLBlanks(src, 0)
	state := uint8(1)
	for i := start; i < len(src); {
		tok, end, _ := nextSQLToken(src, i)
		next := sqlTrans[state][tok]
		if tok == tokSemi && next == 1 && state != 1 {
			return src[start:end], skipSQLBlanks(src, end) < len(src)
		}
		state, i = next, end
	}
	return src[start:], false
}

// sqliteParamNames returns the names (without their prefix) of the :name,
// @name and $name parameters of a SQLite statement, outside literals and
// comments.
func sqliteParamNames(stmt string) map[string]bool {
	names := map[string]bool{}
	for i := 0; i < len(stmt); {
		c := stmt[i]
		if (c == ':' || c == '@' || c == '$') && i+1 < len(stmt) && sqlIDChar(stmt[i+1]) {
			j := i + 1
			for j < len(stmt) && sqlIDChar(stmt[j]) {
				j++
			}
			names[stmt[i+1:j]] = true
			i = j
			continue
		}
		_, end, _ := nextSQLToken(stmt, i)
		i = end
	}
	return names
}

// pgLeadingKeyword returns the first keyword of a PostgreSQL statement, in
// upper case, after blanks, comments (-- and nested /* */) and opening
// parentheses; "" when the statement does not start with a word.
func pgLeadingKeyword(stmt string) string {
	i := 0
	for i < len(stmt) {
		switch c := stmt[i]; {
		case strings.IndexByte(" \t\n\r\f\v(", c) >= 0:
			i++
		case strings.HasPrefix(stmt[i:], "--"):
			j := strings.IndexByte(stmt[i:], '\n')
			if j < 0 {
				return ""
			}
			i += j + 1
		case strings.HasPrefix(stmt[i:], "/*"):
			i = pgCommentEnd(stmt, i)
		default:
			j := i
			for j < len(stmt) && (stmt[j] == '_' || stmt[j] >= 'a' && stmt[j] <= 'z' || stmt[j] >= 'A' && stmt[j] <= 'Z') {
				j++
			}
			return strings.ToUpper(stmt[i:j])
		}
	}
	return ""
}

// pgCommentEnd returns where the (nested) block comment opening at i
// ends, or len(stmt) when it is not closed.
func pgCommentEnd(stmt string, i int) int {
	depth := 0
	for i < len(stmt) {
		switch {
		case strings.HasPrefix(stmt[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(stmt[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return i
}
