package main

import (
	"bufio"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeUIRefusesAnonymousOffLoopback: --ui-anonymous is refused on an
// address that is not loopback, and without --ui, before a node starts.
func TestServeUIRefusesAnonymousOffLoopback(t *testing.T) {
	root := toolRoot(t, nil)
	for _, args := range [][]string{
		{"serve", "--root", root, "--ui", "0.0.0.0:0", "--ui-anonymous"},
		{"serve", "--root", root, "--ui-anonymous"},
	} {
		code, _, stderr := cli(t, args...)
		if code != 2 || !strings.Contains(stderr, "127.0.0.1") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error naming a loopback address", args, code, stderr)
		}
	}
}

var uiURL = regexp.MustCompile(`web console at (http://\S+)/`)

// TestServeUI: 'agentos serve --ui' prints the console's URL; the console
// sends a browser to its login page, and the token it wrote (0600, no
// signing key configured) logs in.
func TestServeUI(t *testing.T) {
	root := toolRoot(t, nil)
	cmd := exec.Command(os.Args[0], "serve", "--root", root, "--ui", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "AGENTOS_CLI_CHILD=1")
	var errOut lockedBuffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := uiURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	var base string
	select {
	case base = <-found:
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve --ui printed no URL; stderr: %s", errOut.String())
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(base + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("GET /runs without a session: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	path := filepath.Join(root, UITokenFile)
	tok, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("the token file is %v, want 0600", fi.Mode().Perm())
	}
	resp, err = c.PostForm(base+"/login", url.Values{"token": {strings.TrimSpace(string(tok))}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login with the node's token: %d", resp.StatusCode)
	}
	resp, err = c.Get(base + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /runs logged in: %d", resp.StatusCode)
	}
}
