package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/store"
)

func open(t *testing.T, path string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStore runs the store's suite on SQLite and on a real PostgreSQL
// server (started in a temporary folder; CI installs it), each with a
// fresh database and with one an older agenthost left.
func TestStore(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		suite(t, filepath.Join(t.TempDir(), "agenthost.db"))
		upgrade(t, filepath.Join(t.TempDir(), "old.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		url := startPostgres(t)
		suite(t, url)
		upgrade(t, createDatabase(t, url, "old"))
	})
}

// TestSessionIDsPerTenant pins session IDs as a namespace per tenant:
// two tenants may hold the same ID, each its own session, and clients
// creating one ID at once all get the one session.
func TestSessionIDsPerTenant(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { sessionIDs(t, filepath.Join(t.TempDir(), "agenthost.db")) })
	t.Run("postgres", func(t *testing.T) { sessionIDs(t, startPostgres(t)) })
}

func sessionIDs(t *testing.T, path string) {
	ctx := context.Background()
	s := open(t, path)
	defer s.Close()
	for _, tenant := range []string{"acme", "beta"} {
		ses, err := s.CreateSessionID(ctx, tenant, tenant+"-profile", "thread-1")
		if err != nil || ses.ID != "thread-1" || ses.Profile != tenant+"-profile" {
			t.Fatalf("%s creates thread-1: %+v %v", tenant, ses, err)
		}
		if _, err := s.AppendMessage(ctx, tenant, "thread-1", store.Message{Role: "user", Content: tenant + " says"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tenant := range []string{"acme", "beta"} {
		ses, err := s.Session(ctx, tenant, "thread-1")
		if err != nil || ses.Profile != tenant+"-profile" {
			t.Errorf("%s's thread-1: %+v %v", tenant, ses, err)
		}
		msgs, err := s.Messages(ctx, tenant, "thread-1")
		if err != nil || len(msgs) != 1 || msgs[0].Content != tenant+" says" || msgs[0].Seq != 1 {
			t.Errorf("%s's messages: %+v %v", tenant, msgs, err)
		}
	}
	// Creating an ID the tenant has already gives its session back.
	if ses, err := s.CreateSessionID(ctx, "acme", "other-profile", "thread-1"); err != nil || ses.Profile != "acme-profile" {
		t.Errorf("acme creates thread-1 again: %+v %v", ses, err)
	}
	for i := range 10 {
		id := "together-" + strconv.Itoa(i)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if ses, err := s.CreateSessionID(ctx, "acme", "p", id); err != nil || ses.ID != id {
					t.Errorf("%s at once: %+v %v", id, ses, err)
				}
			})
		}
		wg.Wait()
	}
	stats, err := s.ToolStats(ctx, "")
	if err != nil || len(stats) != 0 {
		t.Errorf("stats %+v %v", stats, err)
	}
}

// upgrade opens a database at the schema an older agenthost left
// (sessions keyed by ID alone) with history in it, and checks that the
// migration keeps every session, message and job under its tenant.
func upgrade(t *testing.T, path string) {
	ctx := context.Background()
	old, err := store.OpenVersion(ctx, path, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO sessions (id, tenant, profile, created) VALUES ('s1', 'acme', 'helper', 1000), ('s2', 'beta', 'other', 2000)`,
		`INSERT INTO messages (session, seq, role, content, metadata, created) VALUES
			('s1', 1, 'user', 'hi', NULL, 1001),
			('s1', 2, 'tool', '{}', '{"tool_agent_output":{"tool_name":"core__echo","status":"success"}}', 1002),
			('s2', 1, 'user', 'beta here', NULL, 2001)`,
		`INSERT INTO jobs (id, tenant, tool, status, input, result, created, updated) VALUES ('j1', 'acme', 'core:echo', 'done', '{}', '{"status":"success"}', 3000, 3001)`,
	} {
		if err := old.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	s := open(t, path)
	defer s.Close()
	msgs, err := s.Messages(ctx, "acme", "s1")
	if err != nil || len(msgs) != 2 || msgs[1].Role != "tool" || string(msgs[1].Metadata) != `{"tool_agent_output":{"tool_name":"core__echo","status":"success"}}` {
		t.Fatalf("acme's s1 after the upgrade: %+v %v", msgs, err)
	}
	if ses, err := s.Session(ctx, "beta", "s2"); err != nil || ses.Profile != "other" || ses.Created.UnixMilli() != 2000 {
		t.Errorf("beta's s2: %+v %v", ses, err)
	}
	if _, err := s.Session(ctx, "beta", "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("beta reads acme's s1: %v", err)
	}
	if m, err := s.AppendMessage(ctx, "acme", "s1", store.Message{Role: "assistant", Content: "done"}); err != nil || m.Seq != 3 {
		t.Errorf("append after the upgrade: %+v %v", m, err)
	}
	if stats, err := s.ToolStats(ctx, "acme"); err != nil || len(stats) != 1 || stats[0].Tool != "core__echo" {
		t.Errorf("stats after the upgrade: %+v %v", stats, err)
	}
	if j, err := s.Job(ctx, "acme", "j1"); err != nil || j.Status != store.JobDone || j.Result == nil || j.Result.Status != abi.StatusSuccess {
		t.Errorf("the job after the upgrade: %+v %v", j, err)
	}
}

// suite pins sessions and messages: order, tenant scoping (another
// tenant gets ErrNotFound for every ID), bad input, concurrent appends
// without a lost or repeated number, failure analytics, and identical
// history after a restart (a reopen of the same database).
func suite(t *testing.T, path string) {
	ctx := context.Background()
	s := open(t, path)
	ses, err := s.CreateSession(ctx, "acme", "helper")
	if err != nil {
		t.Fatal(err)
	}
	meta := json.RawMessage(`{"tool_agent_output":{"tool_name":"core__echo","status":"success"}}`)
	for _, m := range []store.Message{{Role: "user", Content: "hi"}, {Role: "tool", Content: `{"a":1}`, Metadata: meta}, {Role: "assistant", Content: "done"}} {
		if _, err := s.AppendMessage(ctx, "acme", ses.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	for name, f := range map[string]func() error{
		"session":  func() error { _, err := s.Session(ctx, "other", ses.ID); return err },
		"messages": func() error { _, err := s.Messages(ctx, "other", ses.ID); return err },
		"append": func() error {
			_, err := s.AppendMessage(ctx, "other", ses.ID, store.Message{Role: "user", Content: "x"})
			return err
		},
	} {
		if err := f(); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another tenant's %s: %v", name, err)
		}
	}
	for name, m := range map[string]store.Message{
		"role":     {Role: "root", Content: "x"},
		"metadata": {Role: "tool", Content: "x", Metadata: json.RawMessage(`[1`)},
		"huge":     {Role: "user", Content: strings.Repeat("x", store.MaxContent+1)},
	} {
		if _, err := s.AppendMessage(ctx, "acme", ses.ID, m); err == nil {
			t.Errorf("%s: appended", name)
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if _, err := s.AppendMessage(ctx, "acme", ses.ID, store.Message{Role: "user", Content: "c"}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	before, err := s.Messages(ctx, "acme", ses.ID)
	if err != nil || len(before) != 83 {
		t.Fatalf("%d messages, %v", len(before), err)
	}
	for i, m := range before {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
	}
	lease := time.Now().Add(time.Hour)
	job, created, err := s.CreateJob(ctx, "acme", store.NewJob{Tool: "core:echo", Input: json.RawMessage(`{"a": 1}`), Instance: "a", Lease: lease})
	if err != nil || !created || job.Status != store.JobRunning || string(job.Input) != `{"a":1}` {
		t.Fatalf("job %+v %v", job, err)
	}
	if _, err := s.Job(ctx, "other", job.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant's job: %v", err)
	}
	if _, _, err := s.FinishJob(ctx, "other", job.ID, abi.Envelope{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant finishes a job: %v", err)
	}
	running, _, _ := s.CreateJob(ctx, "acme", store.NewJob{Tool: "core:echo", Instance: "a", Lease: lease})
	// Another instance's job under a live lease, which no start ends.
	live, _, _ := s.CreateJob(ctx, "acme", store.NewJob{Tool: "core:echo", Instance: "b", Lease: lease})
	queued, _, _ := s.CreateJob(ctx, "acme", store.NewJob{Tool: "core:echo", Instance: "a", Lease: lease, Status: store.JobQueued})
	success := abi.Envelope{ToolID: "core:echo", Status: abi.StatusSuccess, Output: json.RawMessage(`{"a":1}`)}
	if j, ok, err := s.FinishJob(ctx, "acme", job.ID, success); err != nil || !ok || j.Status != store.JobDone || j.Result.Status != abi.StatusSuccess {
		t.Fatalf("finish: %+v %v %v", j, ok, err)
	}
	// One final answer: a second finish changes nothing.
	if j, ok, err := s.FinishJob(ctx, "acme", job.ID, abi.Failure("core:echo", abi.Errorf(abi.CodeCancelled, "late"))); err != nil || ok || j.Result.Status != abi.StatusSuccess {
		t.Fatalf("a second finish: %+v %v %v", j, ok, err)
	}
	// Idempotency keys: the same call finds its job, another call is a
	// conflict, and another tenant's key is its own.
	keyed, created, err := s.CreateJob(ctx, "acme", store.NewJob{Tool: "core:echo", Input: json.RawMessage(`{"k":1}`), Key: "k1"})
	if err != nil || !created {
		t.Fatal(err)
	}
	if again, created, err := s.CreateJob(ctx, "acme", store.NewJob{Tool: "core:echo", Input: json.RawMessage(` {"k": 1} `), Key: "k1"}); err != nil || created || again.ID != keyed.ID {
		t.Errorf("a retried start: %+v %v %v", again, created, err)
	}
	if _, _, err := s.CreateJob(ctx, "acme", store.NewJob{Tool: "core:echo", Input: json.RawMessage(`{"k":2}`), Key: "k1"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("the key with other arguments: %v", err)
	}
	if _, created, err := s.CreateJob(ctx, "beta", store.NewJob{Tool: "core:echo", Input: json.RawMessage(`{"k":2}`), Key: "k1", Instance: "b", Lease: lease}); err != nil || !created {
		t.Errorf("another tenant's key: %v %v", created, err)
	}
	s.FinishJob(ctx, "acme", keyed.ID, success)
	stats, err := s.ToolStats(ctx, "acme")
	if err != nil || len(stats) != 1 || stats[0].Tool != "core__echo" || stats[0].Status != "success" || stats[0].Calls != 1 {
		t.Fatalf("stats %+v %v", stats, err)
	}
	if other, _ := s.ToolStats(ctx, "other"); len(other) != 0 {
		t.Fatalf("another tenant's stats %+v", other)
	}
	s.Close()
	s2 := open(t, path)
	defer s2.Close()
	after, err := s2.Messages(ctx, "acme", ses.ID)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(before)
	b, _ := json.Marshal(after)
	if string(a) != string(b) || string(after[1].Metadata) != string(meta) {
		t.Fatal("history differs after a restart")
	}
	// Jobs survive the restart. A start of instance a ends a's
	// unfinished jobs (a running one may have run; a queued one did not)
	// and leaves b's, whose lease holds.
	if j, err := s2.Job(ctx, "acme", job.ID); err != nil || j.Status != store.JobDone || j.Result.Status != abi.StatusSuccess {
		t.Fatalf("the finished job after a restart: %+v %v", j, err)
	}
	if n, err := s2.InterruptJobs(ctx, "a", time.Now()); err != nil || n != 2 {
		t.Fatalf("interrupted %d, %v", n, err)
	}
	if j, _ := s2.Job(ctx, "acme", running.ID); j.Status != store.JobInterrupted || j.Error == nil || j.Error.Code != store.CodeMayHaveRun || j.Result != nil {
		t.Fatalf("the interrupted job: %+v", j)
	}
	if j, _ := s2.Job(ctx, "acme", queued.ID); j.Status != store.JobDone || j.Result.Error.Code != abi.CodeCancelled {
		t.Fatalf("the queued job: %+v", j)
	}
	if j, _ := s2.Job(ctx, "acme", live.ID); j.Status != store.JobRunning {
		t.Fatalf("another instance's job under its lease: %+v", j)
	}
	// Its lease expired: any instance ends it.
	if n, err := s2.InterruptJobs(ctx, "", lease.Add(time.Second)); err != nil || n != 2 {
		t.Fatalf("expired leases: %d %v", n, err)
	}
	if n, err := s2.DeleteJobs(ctx, time.Now().Add(time.Minute)); err != nil || n < 4 {
		t.Fatalf("deleted %d ended jobs, %v", n, err)
	}
}

// TestCrash kills a process that is appending (SIGKILL) and checks that
// every message it was told was stored is there, in order.
func TestCrash(t *testing.T) {
	if os.Getenv("AGENTHOST_STORE_CHILD") != "" {
		ctx := context.Background()
		s := open(t, os.Getenv("AGENTHOST_STORE_CHILD"))
		ses, _ := s.CreateSession(ctx, "t", "p")
		os.Stdout.WriteString(ses.ID + "\n")
		for {
			m, err := s.AppendMessage(ctx, "t", ses.ID, store.Message{Role: "user", Content: "m"})
			if err != nil {
				os.Exit(3)
			}
			os.Stdout.WriteString(strconv.FormatInt(m.Seq, 10) + "\n")
		}
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCrash$")
	cmd.Env = append(os.Environ(), "AGENTHOST_STORE_CHILD="+path)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var buf []byte
	chunk := make([]byte, 4096)
	for strings.Count(string(buf), "\n") < 50 {
		n, err := out.Read(chunk)
		if err != nil {
			t.Fatalf("child: %v (%s)", err, buf)
		}
		buf = append(buf, chunk[:n]...)
	}
	cmd.Process.Kill()
	cmd.Wait()
	lines := strings.Split(strings.TrimSpace(string(buf)), "\n")
	sesID, acked := lines[0], lines[len(lines)-2] // the last line may be partial
	s := open(t, path)
	defer s.Close()
	msgs, err := s.Messages(context.Background(), "t", sesID)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(acked)
	if len(msgs) < n || n < 48 {
		t.Fatalf("%d messages survived; %d were acknowledged", len(msgs), n)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("gap at %d", i)
		}
	}
}
