package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Bounds of the listing queries.
const (
	// MaxPage bounds a page of sessions or messages.
	MaxPage = 500
	// AnalyticsWindow is how many of a tenant's latest calls the
	// analytics read: enough for stable percentiles, bounded so that a
	// large store answers at once.
	AnalyticsWindow = 20000
	// LastFailures is how many recent failures per tool the analytics
	// keep, with their observations.
	LastFailures = 5
	// SnippetBytes bounds a session's first message and a failure's
	// observation in listings.
	SnippetBytes = 300
	// MaxPageBytes bounds the messages of a page (their content and
	// metadata): a page of large tool results ends early, so that no
	// answer holds hundreds of megabytes. A page holds at least one
	// message.
	MaxPageBytes = 8 << 20
)

// SessionSummary is a session as a listing shows it.
type SessionSummary struct {
	ID      string    `json:"id"`
	Profile string    `json:"profile"`
	Created time.Time `json:"created"`
	// LastActivity is the time of its latest message (Created when none).
	LastActivity time.Time `json:"lastActivity"`
	Messages     int64     `json:"messages"`
	// FirstMessage is the start of its first user message.
	FirstMessage string `json:"firstMessage"`
}

// SessionPage is a page of a tenant's sessions, latest activity first.
type SessionPage struct {
	Sessions []SessionSummary `json:"sessions"`
	// Next is the cursor of the next (older) page; "" at the end.
	Next string `json:"next,omitempty"`
}

// ErrCursor is a page cursor this store did not hand out.
var ErrCursor = errors.New("store: the cursor is not one this server gave")

// ListSessions returns a page of the tenant's sessions, the latest
// activity first. cursor is "" for the first page, else a page's Next.
func (s *Store) ListSessions(ctx context.Context, tenant, cursor string, limit int) (SessionPage, error) {
	if limit <= 0 || limit > MaxPage {
		limit = MaxPage
	}
	var beforeMs int64
	var beforeID string
	if cursor != "" {
		ms, id, ok := strings.Cut(cursor, ".")
		n, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil || n <= 0 || id == "" {
			return SessionPage{}, ErrCursor
		}
		beforeMs, beforeID = n, id
	}
	rows, err := s.db.QueryContext(ctx, s.q(`
		SELECT s.id, s.profile, s.created, COALESCE(MAX(m.created), s.created), COUNT(m.seq),
		       COALESCE((SELECT SUBSTR(f.content, 1, `+strconv.Itoa(SnippetBytes)+`) FROM messages f
		                 WHERE f.tenant = s.tenant AND f.session = s.id AND f.role = 'user' ORDER BY f.seq LIMIT 1), '')
		FROM sessions s LEFT JOIN messages m ON m.tenant = s.tenant AND m.session = s.id
		WHERE s.tenant = ?
		GROUP BY s.tenant, s.id, s.profile, s.created
		HAVING CAST(? AS BIGINT) = 0 OR COALESCE(MAX(m.created), s.created) < ? OR (COALESCE(MAX(m.created), s.created) = ? AND s.id < ?)
		ORDER BY 4 DESC, 1 DESC
		LIMIT ?`), tenant, beforeMs, beforeMs, beforeMs, beforeID, limit+1)
	if err != nil {
		return SessionPage{}, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	out := SessionPage{Sessions: []SessionSummary{}}
	for rows.Next() {
		var ss SessionSummary
		var created, last int64
		if err := rows.Scan(&ss.ID, &ss.Profile, &created, &last, &ss.Messages, &ss.FirstMessage); err != nil {
			return SessionPage{}, fmt.Errorf("store: %w", err)
		}
		ss.Created, ss.LastActivity = time.UnixMilli(created).UTC(), time.UnixMilli(last).UTC()
		ss.FirstMessage = strings.ToValidUTF8(ss.FirstMessage, "")
		out.Sessions = append(out.Sessions, ss)
	}
	if err := rows.Err(); err != nil {
		return SessionPage{}, fmt.Errorf("store: %w", err)
	}
	if len(out.Sessions) > limit {
		out.Sessions = out.Sessions[:limit]
		last := out.Sessions[limit-1]
		out.Next = strconv.FormatInt(last.LastActivity.UnixMilli(), 10) + "." + last.ID
	}
	return out, nil
}

// MessagePage is a page of a session's messages, in order.
type MessagePage struct {
	Messages []Message `json:"messages"`
	// More says older messages remain (ask again with before = the
	// first message's Seq).
	More bool `json:"more"`
	// Answered, for each user message of the page (by Seq), says whether
	// its run stored an answer: an assistant message without tool calls
	// before the next user message.
	Answered map[int64]bool `json:"-"`
}

// MessagesPage returns up to limit of the tenant's session's messages
// with a Seq below before (0: the latest), oldest first, and fewer when
// they would hold more than MaxPageBytes.
func (s *Store) MessagesPage(ctx context.Context, tenant, session string, before int64, limit int) (MessagePage, error) {
	if limit <= 0 || limit > MaxPage {
		limit = MaxPage
	}
	if _, err := s.Session(ctx, tenant, session); err != nil {
		return MessagePage{}, err
	}
	// First the sizes, newest first, to find where the page starts;
	// then the messages themselves.
	sizes, err := s.db.QueryContext(ctx, s.q(`SELECT seq, LENGTH(content) + COALESCE(LENGTH(metadata), 0) FROM messages
		WHERE tenant = ? AND session = ? AND (CAST(? AS BIGINT) = 0 OR seq < ?) ORDER BY seq DESC LIMIT ?`), tenant, session, before, before, limit+1)
	if err != nil {
		return MessagePage{}, fmt.Errorf("store: %w", err)
	}
	out := MessagePage{Messages: []Message{}, Answered: map[int64]bool{}}
	var from, total int64
	n := 0
	for sizes.Next() {
		var seq, size int64
		if err := sizes.Scan(&seq, &size); err != nil {
			sizes.Close()
			return MessagePage{}, fmt.Errorf("store: %w", err)
		}
		if n == limit || (n > 0 && total+size > MaxPageBytes) {
			out.More = true
			break
		}
		from, total, n = seq, total+size, n+1
	}
	sizes.Close()
	if err := sizes.Err(); err != nil {
		return MessagePage{}, fmt.Errorf("store: %w", err)
	}
	if n == 0 {
		return out, nil
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT seq, role, content, metadata, created FROM messages
		WHERE tenant = ? AND session = ? AND seq >= ? AND (CAST(? AS BIGINT) = 0 OR seq < ?) ORDER BY seq`), tenant, session, from, before, before)
	if err != nil {
		return MessagePage{}, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var m Message
		var meta sql.NullString
		var ms int64
		if err := rows.Scan(&m.Seq, &m.Role, &m.Content, &meta, &ms); err != nil {
			return MessagePage{}, fmt.Errorf("store: %w", err)
		}
		if meta.Valid {
			m.Metadata = json.RawMessage(meta.String)
		}
		m.Created = time.UnixMilli(ms).UTC()
		out.Messages = append(out.Messages, m)
	}
	if err := rows.Err(); err != nil {
		return MessagePage{}, fmt.Errorf("store: %w", err)
	}
	rows.Close()
	// A run is answered when an answer follows its user message. The
	// last run of the page may continue after it: look there too.
	var run int64 = -1
	for _, m := range out.Messages {
		switch {
		case m.Role == "user":
			run = m.Seq
			out.Answered[run] = false
		case run >= 0 && isAnswer(m):
			out.Answered[run] = true
		}
	}
	if run >= 0 && !out.Answered[run] {
		last := out.Messages[len(out.Messages)-1].Seq
		var answered int64
		err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM messages WHERE tenant = ? AND session = ? AND seq > ? AND role = 'assistant' AND metadata IS NULL
			AND seq < COALESCE((SELECT MIN(seq) FROM messages WHERE tenant = ? AND session = ? AND seq > ? AND role = 'user'), ?)`),
			tenant, session, last, tenant, session, last, int64(math.MaxInt64)).Scan(&answered)
		if err != nil {
			return MessagePage{}, fmt.Errorf("store: %w", err)
		}
		out.Answered[run] = answered > 0
	}
	return out, nil
}

// isAnswer reports whether m is a run's answer: an assistant message
// with no tool calls (a turn that calls tools carries them in its
// metadata).
func isAnswer(m Message) bool { return m.Role == "assistant" && len(m.Metadata) == 0 }

// ToolUsage is one tool's calls as the analytics count them.
type ToolUsage struct {
	Tool     string           `json:"tool"`
	Calls    int64            `json:"calls"`
	Failures int64            `json:"failures"`
	ByCode   map[string]int64 `json:"failuresByCode"`
	// P50Ms and P95Ms are latency percentiles over the calls whose
	// duration is known, in milliseconds (nil when none is).
	P50Ms *float64 `json:"p50Ms"`
	P95Ms *float64 `json:"p95Ms"`
	// LastFailures are the latest failures, newest first, with the
	// observation the model was given (cut to SnippetBytes).
	LastFailures []FailureSample `json:"lastFailures"`
}

// FailureSample is one failed call.
type FailureSample struct {
	Time        time.Time `json:"time"`
	Code        string    `json:"code"`
	Observation string    `json:"observation"`
	// Session is the session of an agent's call; Job the job of an
	// asynchronous one.
	Session string `json:"session,omitempty"`
	Job     string `json:"job,omitempty"`
}

// Analytics is the answer of ToolAnalytics.
type Analytics struct {
	Tools []ToolUsage `json:"tools"`
	// Window is how many of the latest calls were read (at most
	// AnalyticsWindow).
	Window int `json:"window"`
}

// jsonField is the SQL expression of a field of a JSON TEXT column.
func (s *Store) jsonField(col, path string) string {
	if s.postgres {
		parts := strings.Split(path, ".")
		expr := "(" + col + "::jsonb)"
		for i, p := range parts {
			op := "->"
			if i == len(parts)-1 {
				op = "->>"
			}
			expr += op + "'" + p + "'"
		}
		return expr
	}
	return "json_extract(" + col + ", '$." + path + "')"
}

// ToolAnalytics counts the tenant's latest calls per tool: the tool
// messages of its agent runs and its finished jobs.
func (s *Store) ToolAnalytics(ctx context.Context, tenant string) (Analytics, error) {
	f := s.jsonField
	snippet := strconv.Itoa(SnippetBytes)
	rows, err := s.db.QueryContext(ctx, s.q(`
		SELECT * FROM (
			SELECT COALESCE(`+f("metadata", "tool_id")+`, `+f("metadata", "tool_agent_output.tool_name")+`, '') AS tool,
			       COALESCE(`+f("metadata", "tool_agent_output.status")+`, '') AS status,
			       COALESCE(`+f("metadata", "tool_agent_output.error.code")+`, '') AS code,
			       `+f("metadata", "duration_ms")+` AS ms,
			       CASE WHEN COALESCE(`+f("metadata", "tool_agent_output.status")+`, '') = 'success' THEN '' ELSE SUBSTR(content, 1, `+snippet+`) END AS obs,
			       created, seq, session AS ses, '' AS job
			FROM messages WHERE tenant = ? AND role = 'tool'
			UNION ALL
			SELECT tool, COALESCE(`+f("result", "status")+`, ''), COALESCE(`+f("result", "error.code")+`, ''),
			       `+f("result", "durationMs")+`,
			       COALESCE(SUBSTR(`+f("result", "error.message")+`, 1, `+snippet+`), ''),
			       updated, 0, '', id
			FROM jobs WHERE tenant = ? AND result IS NOT NULL
		) calls ORDER BY created DESC, seq DESC LIMIT ?`), tenant, tenant, AnalyticsWindow)
	if err != nil {
		return Analytics{}, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	by := map[string]*ToolUsage{}
	lat := map[string][]float64{}
	out := Analytics{Tools: []ToolUsage{}}
	for rows.Next() {
		var tool, status, code, obs, ses, job string
		var ms sql.NullString
		var created, seq int64
		if err := rows.Scan(&tool, &status, &code, &ms, &obs, &created, &seq, &ses, &job); err != nil {
			return Analytics{}, fmt.Errorf("store: %w", err)
		}
		out.Window++
		u := by[tool]
		if u == nil {
			u = &ToolUsage{Tool: tool, ByCode: map[string]int64{}, LastFailures: []FailureSample{}}
			by[tool] = u
		}
		u.Calls++
		// The duration is a JSON number; drivers give it as text or a
		// number, so it is read as text and parsed.
		if v, err := strconv.ParseFloat(ms.String, 64); ms.Valid && err == nil && v >= 0 {
			lat[tool] = append(lat[tool], v)
		}
		// A tool message without a record (an older server's) is a
		// call of unknown outcome, not a failure.
		if status == "success" || status == "" {
			continue
		}
		u.Failures++
		if code == "" {
			code = "UNKNOWN"
		}
		u.ByCode[code]++
		if len(u.LastFailures) < LastFailures {
			u.LastFailures = append(u.LastFailures, FailureSample{Time: time.UnixMilli(created).UTC(), Code: code, Observation: strings.ToValidUTF8(obs, ""), Session: ses, Job: job})
		}
	}
	if err := rows.Err(); err != nil {
		return Analytics{}, fmt.Errorf("store: %w", err)
	}
	for tool, u := range by {
		if l := lat[tool]; len(l) > 0 {
			sort.Float64s(l)
			p50, p95 := percentile(l, 50), percentile(l, 95)
			u.P50Ms, u.P95Ms = &p50, &p95
		}
		out.Tools = append(out.Tools, *u)
	}
	sort.Slice(out.Tools, func(i, j int) bool { return out.Tools[i].Tool < out.Tools[j].Tool })
	return out, nil
}

// percentile is the nearest-rank percentile p of sorted values.
func percentile(sorted []float64, p float64) float64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
