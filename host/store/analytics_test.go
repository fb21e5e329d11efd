package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/store"
)

// TestListings runs the listing queries (sessions, pages of messages,
// tool analytics) on SQLite and on a real PostgreSQL server: the SQL
// differs in places (JSON fields), the answers must not.
func TestListings(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { listings(t, filepath.Join(t.TempDir(), "agenthost.db")) })
	t.Run("postgres", func(t *testing.T) { listings(t, startPostgres(t)) })
}

func listings(t *testing.T, path string) {
	ctx := context.Background()
	s := open(t, path)
	defer s.Close()
	add := func(tenant, session string, m store.Message) {
		t.Helper()
		if _, err := s.AppendMessage(ctx, tenant, session, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := s.CreateSessionID(ctx, "acme", "p-"+id, id); err != nil {
			t.Fatal(err)
		}
		add("acme", id, store.Message{Role: "user", Content: "hello from " + id})
		time.Sleep(3 * time.Millisecond) // distinct last activity
	}
	if _, err := s.CreateSessionID(ctx, "beta", "p", "a"); err != nil {
		t.Fatal(err)
	}
	// Activity in a moves it to the top.
	add("acme", "a", store.Message{Role: "assistant", Content: "answer"})

	var got []string
	cursor := ""
	for i := 0; i < 5; i++ {
		page, err := s.ListSessions(ctx, "acme", cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, ss := range page.Sessions {
			got = append(got, fmt.Sprintf("%s/%s/%d/%s", ss.ID, ss.Profile, ss.Messages, ss.FirstMessage))
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	want := fmt.Sprint([]string{"a/p-a/2/hello from a", "c/p-c/1/hello from c", "b/p-b/1/hello from b"})
	if fmt.Sprint(got) != want {
		t.Errorf("sessions: %v, want %v", got, want)
	}
	if _, err := s.ListSessions(ctx, "acme", "12.", 1); !errors.Is(err, store.ErrCursor) {
		t.Errorf("a bad cursor: %v", err)
	}
	if page, _ := s.ListSessions(ctx, "beta", "", 10); len(page.Sessions) != 1 || page.Sessions[0].Messages != 0 {
		t.Errorf("beta: %+v", page)
	}

	// A page ending inside a run still knows whether the run answered.
	calls, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"id": "1", "name": "x"}}})
	add("acme", "b", store.Message{Role: "assistant", Content: "", Metadata: calls})
	add("acme", "b", store.Message{Role: "tool", Content: "42"})
	add("acme", "b", store.Message{Role: "assistant", Content: "it is 42"})
	add("acme", "b", store.Message{Role: "user", Content: "and then?"})
	page, err := s.MessagesPage(ctx, "acme", "b", 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 2 || page.Messages[0].Seq != 1 || !page.Answered[1] || page.More {
		t.Errorf("page before 3: %+v", page)
	}
	if page, _ = s.MessagesPage(ctx, "acme", "b", 0, 1); len(page.Messages) != 1 || page.Messages[0].Seq != 5 || page.Answered[5] || !page.More {
		t.Errorf("the latest page: %+v", page)
	}
	// Large messages end a page early.
	if _, err := s.CreateSessionID(ctx, "acme", "p", "large"); err != nil {
		t.Fatal(err)
	}
	big, _ := json.Marshal(map[string]string{"blob": strings.Repeat("x", 3<<20)})
	for i := 0; i < 3; i++ {
		add("acme", "large", store.Message{Role: "tool", Content: "r", Metadata: big})
	}
	if page, err = s.MessagesPage(ctx, "acme", "large", 0, 10); err != nil || len(page.Messages) != 2 || page.Messages[0].Seq != 2 || !page.More {
		t.Errorf("a page of large messages: %d messages, more=%v, %v", len(page.Messages), page.More, err)
	}
	if _, err := s.MessagesPage(ctx, "beta", "b", 0, 10); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant's session: %v", err)
	}

	for i, c := range []struct {
		tenant, status, code string
		ms                   float64
	}{{"acme", "success", "", 4}, {"acme", "success", "", 2}, {"acme", "failure", "TIMEOUT", 8}, {"beta", "failure", "TOOL_ERROR", 1}} {
		out := map[string]any{"tool_name": "x__y", "status": c.status}
		if c.code != "" {
			out["error"] = map[string]any{"code": c.code}
		}
		meta, _ := json.Marshal(map[string]any{"tool_id": "x:y", "tool_agent_output": out, "duration_ms": c.ms})
		if _, err := s.CreateSessionID(ctx, c.tenant, "p", "calls"); err != nil {
			t.Fatal(err)
		}
		add(c.tenant, "calls", store.Message{Role: "tool", Content: fmt.Sprintf("observation %d", i), Metadata: meta})
	}
	a, err := s.ToolAnalytics(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	// 7: three calls of x:y, four untagged tool messages (sessions b
	// and large).
	if len(a.Tools) != 2 || a.Window != 7 {
		t.Fatalf("analytics: %+v", a)
	}
	u := a.Tools[1] // "" (the untagged tool message of session b), then x:y
	if u.Tool != "x:y" || u.Calls != 3 || u.Failures != 1 || u.ByCode["TIMEOUT"] != 1 || *u.P50Ms != 4 || *u.P95Ms != 8 ||
		len(u.LastFailures) != 1 || u.LastFailures[0].Observation != "observation 2" {
		t.Errorf("x:y: %+v", u)
	}
}
