// Package pgtest starts a throwaway PostgreSQL server for tests (Start)
// and for the cluster demo (StartServer), with the machine's initdb and
// pg_ctl (as the postgres user when run as root). A test that needs one is
// skipped, saying why, where PostgreSQL is not installed.
package pgtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/agentos-run/agentos/internal/loopport"
)

// Start runs a server for the rest of t and returns the DSN of its
// superuser "agent" on database "postgres".
func Start(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentos-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srv, err := StartServer(dir)
	if errors.Is(err, ErrNotInstalled) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv.DSN
}

// ErrNotInstalled: the machine has no PostgreSQL server programs (initdb,
// pg_ctl), or no postgres user to run them as root.
var ErrNotInstalled = errors.New("PostgreSQL is not installed on this machine (no initdb or pg_ctl on PATH or in /usr/lib/postgresql/*/bin): install the postgresql package")

// Installed reports whether the machine has the PostgreSQL server programs
// StartServer needs (initdb and pg_ctl).
func Installed() bool { return find("initdb") != "" && find("pg_ctl") != "" }

// Server is a throwaway PostgreSQL server on loopback.
type Server struct {
	// DSN reaches its superuser "agent" (trust authentication) on
	// database "postgres".
	DSN  string
	data string
	cred *syscall.Credential
	ctl  string
	// startArgs start the server again on the same port (Start after Stop).
	startArgs []string
}

// StartServer initialises a cluster under dir (which MUST exist and be
// empty) and starts its server on a free loopback port, as the postgres
// user when run as root (PostgreSQL refuses root). Stop it with Stop; dir is
// the caller's to remove.
func StartServer(dir string) (*Server, error) {
	if !Installed() {
		return nil, ErrNotInstalled
	}
	initdb, pgctl := find("initdb"), find("pg_ctl")
	var cred *syscall.Credential
	if os.Geteuid() == 0 { // PostgreSQL refuses to run as root
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("%w (running as root and there is no postgres user to run it as)", ErrNotInstalled)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	run := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %v: %w\n%s", filepath.Base(name), args, err, out)
		}
		return nil
	}
	// Drawn below the ephemeral range (loopport): initdb takes seconds
	// before the server binds the port.
	ports, err := loopport.Reserve(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	data := filepath.Join(dir, "data")
	if err := run(initdb, "-D", data, "-A", "trust", "-U", "agent"); err != nil {
		return nil, err
	}
	startArgs := []string{"-D", data, "-l", filepath.Join(dir, "log"), "-w", "-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", port, dir), "start"}
	if err := run(pgctl, startArgs...); err != nil {
		return nil, err
	}
	return &Server{DSN: fmt.Sprintf("postgres://agent@127.0.0.1:%d/postgres?sslmode=disable", port), data: data, cred: cred, ctl: pgctl, startArgs: startArgs}, nil
}

// Start starts a stopped server again, on the same port with the same
// data (a database restart under its clients), and waits until it accepts
// connections.
func (s *Server) Start() error {
	cmd := exec.Command(s.ctl, s.startArgs...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl start: %w\n%s", err, out)
	}
	return nil
}

// Stop stops the server at once (immediate shutdown) and waits for it.
func (s *Server) Stop() {
	cmd := exec.Command(s.ctl, "-D", s.data, "-m", "immediate", "-w", "stop")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	_ = cmd.Run()
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
