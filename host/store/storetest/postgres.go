// Package storetest runs a real PostgreSQL server for tests of the
// store and of what keeps its state there.
package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"
)

// Postgres starts a PostgreSQL server of its own (Debian's binaries
// under /usr/lib/postgresql) in a temporary folder on a free loopback
// port, and returns its URL. As root, the server runs as the postgres
// user. Without the binaries the test is skipped, except in CI.
func Postgres(t testing.TB) string {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("PostgreSQL is not installed (.ci/run installs it)")
		}
		t.Skip("PostgreSQL is not installed")
	}
	bin := filepath.Dir(bins[len(bins)-1])
	dir, err := os.MkdirTemp("", "agenthost-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	asUser := func(name string, args ...string) *exec.Cmd {
		if os.Geteuid() == 0 {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
		}
		return exec.Command(name, args...)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		os.Chmod(dir, 0o755)
		os.Chown(dir, uid, gid)
	}
	if out, err := asUser(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "agenthost", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	srv := asUser(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
		}
	})
	url := fmt.Sprintf("postgres://agenthost@127.0.0.1:%d/postgres?sslmode=disable", port)
	db, _ := sql.Open("pgx", url)
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for db.PingContext(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("PostgreSQL did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return url
}

// CreateDatabase creates the database name on the server of url and
// returns its URL.
func CreateDatabase(t testing.TB, url, name string) string {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return strings.Replace(url, "/postgres?", "/"+name+"?", 1)
}
