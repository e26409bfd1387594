package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 11: a truncated agentos.json said "unexpected EOF" with no line,
// and errors pointed to "the Config fields in the agentos documentation", a
// page that did not exist. Every parse error names the file, line and
// column and what was expected; unknown keys suggest the nearest known key;
// every error points to docs/CONFIG.md.
func TestConfigErrorsNamePositionAndExpectation(t *testing.T) {
	for _, tc := range []struct {
		body, where string
		want        []string
	}{
		{"{\n  \"tools_dir\": \"tools\",\n  \"limits\": {\"timeout\": \"5s\"", ":3:29:", []string{"unexpected EOF", `expected '}' to close the object opened at 3:13, then '}' to close the object opened at 1:1`, "truncated"}},
		{`{"write_dirs": ["a", `, ":1:21:", []string{"unexpected EOF", `expected ']' to close the array opened at 1:16, then '}' to close the object opened at 1:1`}},
		{`{"tools_dir": "too`, ":1:19:", []string{"unexpected EOF", `a closing '"'`}},
		{"{\n  \"isolaton\": \"process\"\n}", ":2:3:", []string{`unknown field "isolaton"`, `did you mean "isolation"?`}},
		{`{"limits": {"timout": "5s"}}`, ":1:13:", []string{`unknown field "timout" in limits`, `did you mean "timeout"?`}},
		{`{"sql": {"postgres_dsn": "X"}}`, ":1:10:", []string{`unknown field "postgres_dsn" in sql`, `did you mean "postgres_dsn_env"?`}},
		{`{"agent": {"grants": [{"right": "read", "scop": "tools/"}]}}`, ":1:41:", []string{`unknown field "scop" in agent.grants[0]`, `did you mean "scope"?`}},
		{`{"retention": {"keep_for": 3}}`, ":1:16:", []string{`unknown field "keep_for" in retention`, "the keys here are keep_bytes, keep_days, keep_runs"}},
		{"{\n \"limits\": {\n  \"timeout\": 5}}", ":3:14:", []string{"limits.timeout", "a duration must be a string"}},
		{`{"limits": {"memory_mb": "256"}}`, ":1:26:", []string{"limits.memory_mb must be a whole number, not \"256\""}},
		{`{"fetch": {"allow": "https://x/"}}`, ":1:21:", []string{"fetch.allow must be an array [...] of strings"}},
		{`{"secrets": {"k": {"env": 5}}}`, ":1:27:", []string{"secrets.k.env must be a string, not 5"}},
		{`{"a": 1,}`, ":1:9:", []string{"expected a key in double quotes"}},
		{`{"a" 1}`, ":1:6:", []string{"expected ':' after the key"}},
		{`[1]`, ":1:1:", []string{"must be one JSON object"}},
		{`{"isolation": "vm"}`, ":", []string{`isolation "vm" is not known`}},
		{"{\"limits\": {\"timeout\": \"5s\",\n \"timeout\": \"1s\"}}", ":2:2:", []string{`limits.timeout is set twice (first at 1:13): keep one`}},
		{`{"quota": {"tool_calls": 1, "tool_calls": 2}}`, ":1:29:", []string{`quota.tool_calls is set twice (first at 1:12)`}},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(dir)
		if err == nil {
			t.Errorf("%q: no error", tc.body)
			continue
		}
		msg := err.Error()
		ok := strings.Contains(msg, ConfigFile+tc.where) && strings.Contains(msg, "docs/CONFIG.md")
		for _, w := range tc.want {
			ok = ok && strings.Contains(msg, w)
		}
		if !ok {
			t.Errorf("%q:\n got  %s\n want %s%s and %q and docs/CONFIG.md", tc.body, msg, ConfigFile, tc.where, tc.want)
		}
	}
}
