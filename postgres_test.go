package agentos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentos-run/agentos"
)

// startPostgres runs a throwaway PostgreSQL server (initdb + pg_ctl, as the
// postgres user when the test runs as root) and returns its DSN.
func startPostgres(t *testing.T) string {
	t.Helper()
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		t.Skip("PostgreSQL is not installed on this machine (no initdb): the pgx path is covered by TestPostgresDSN only")
	}
	pgctl, err := exec.LookPath("pg_ctl")
	if err != nil {
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

// exec_sql against a real PostgreSQL through pgx: bound $n parameters,
// and a tool's transaction rolled back when it throws.
func TestPostgres(t *testing.T) {
	t.Setenv("TEST_PG_DSN", startPostgres(t))
	rt := start(t, agentos.Config{Root: t.TempDir(), Isolation: "inprocess", SQL: agentos.SQLConfig{PostgresDSNEnv: "TEST_PG_DSN"}})
	for _, stmt := range []string{
		`{"sql":"CREATE TABLE users (id SERIAL PRIMARY KEY, name TEXT NOT NULL, plan TEXT)"}`,
		`{"sql":"INSERT INTO users (name, plan) VALUES ($1, $2), ($3, $4)","params":["ada","free","bob","pro"]}`,
	} {
		if _, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(stmt)); err != nil {
			t.Fatal(err)
		}
	}
	res := runTool(t, rt, "tools/pg.ts", `/** Names on a plan. */
export default async function (a: { plan: string }): Promise<string> {
  const r = await tgp.exec_sql("SELECT name FROM users WHERE plan = $1 ORDER BY name", [a.plan]);
  return r.rows.map((u: { name: string }) => u.name).join(",");
}
`, `{"plan":"free"}`)
	if !res.Success || string(res.Result.Result) != `"ada"` {
		t.Fatalf("query: %+v", res)
	}
	res = runTool(t, rt, "tools/pgbad.ts", `/** Inserts then fails. */
export default async function (): Promise<void> {
  await tgp.exec_sql("INSERT INTO users (name, plan) VALUES ($1, $2)", ["eve", "free"]);
  throw new Error("after the insert");
}
`, `{}`)
	if res.Success {
		t.Fatal("the failing tool succeeded")
	}
	out, err := rt.Call(context.Background(), "exec_sql", json.RawMessage(`{"sql":"SELECT count(*) AS n FROM users"}`))
	if err != nil || !strings.Contains(string(out), `"n":2`) {
		t.Fatalf("after the rollback: %s %v", out, err)
	}
}
