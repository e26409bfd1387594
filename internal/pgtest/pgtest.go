// Package pgtest starts a throwaway PostgreSQL server for tests, with the
// machine's initdb and pg_ctl (as the postgres user when the test runs as
// root). A test that needs one is skipped, saying why, where PostgreSQL is
// not installed.
package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Start runs a server for the rest of t and returns the DSN of its
// superuser "agent" on database "postgres".
func Start(t testing.TB) string {
	t.Helper()
	initdb, pgctl := find("initdb"), find("pg_ctl")
	if initdb == "" {
		t.Skip("PostgreSQL is not installed on this machine (no initdb on PATH or in /usr/lib/postgresql/*/bin): install the postgresql package to run this test")
	}
	if pgctl == "" {
		t.Skip("PostgreSQL's pg_ctl is not installed")
	}
	dir, err := os.MkdirTemp("", "agentos-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 { // PostgreSQL refuses to run as root
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root and there is no postgres user to run PostgreSQL as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	data := filepath.Join(dir, "data")
	run(initdb, "-D", data, "-A", "trust", "-U", "agent")
	run(pgctl, "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", port, dir), "start")
	t.Cleanup(func() {
		cmd := exec.Command(pgctl, "-D", data, "-m", "immediate", "-w", "stop")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		_ = cmd.Run()
	})
	return fmt.Sprintf("postgres://agent@127.0.0.1:%d/postgres?sslmode=disable", port)
}

// find returns the path of a PostgreSQL program: on PATH, else in the
// newest /usr/lib/postgresql/N/bin (where Debian's package puts it); "" when
// absent.
func find(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	best, bestVersion := "", -1
	for _, m := range matches {
		v, err := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(m))))
		if err == nil && v > bestVersion {
			best, bestVersion = m, v
		}
	}
	return best
}

// DSNAs returns dsn with its user replaced (trust authentication: no
// password).
func DSNAs(dsn, user string) string {
	const prefix = "postgres://agent@"
	if len(dsn) < len(prefix) || dsn[:len(prefix)] != prefix {
		panic("pgtest: not a DSN from Start: " + dsn)
	}
	return "postgres://" + user + "@" + dsn[len(prefix):]
}
