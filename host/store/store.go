// Package store keeps what `agenthost serve` must not lose: sessions and
// their messages (the content as text; a tool message's structured
// result in its metadata, under tool_agent_output), and jobs (calls that
// outlive their request, jobs.go). Every method takes
// the tenant, and every query is scoped by it: one tenant's IDs are
// ErrNotFound to another. Session IDs are keyed by tenant, so two tenants
// may hold the same ID, each its own session, and an ID tells nothing
// about another tenant's.
//
// Two backends share one implementation, one migration set and one test
// suite: SQLite (modernc.org/sqlite, pure Go; one file, write-ahead log)
// by default, and PostgreSQL (pgx) so that several servers share state.
// Migrations are versioned and applied in a transaction at open. A
// message is durable once AppendMessage returns.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"
	_ "modernc.org/sqlite"             // the database/sql driver "sqlite"
)

// Limits on what a message may hold.
const (
	MaxContent  = 1 << 20
	MaxMetadata = 4 << 20
)

// ErrNotFound is a session the tenant does not have.
var ErrNotFound = errors.New("not found")

// Session is one conversation of a tenant with an agent profile.
type Session struct {
	ID      string    `json:"id"`
	Tenant  string    `json:"-"`
	Profile string    `json:"profile"`
	Created time.Time `json:"created"`
}

// Message is one message of a session, numbered from 1 in order.
type Message struct {
	Seq      int64           `json:"seq"`
	Role     string          `json:"role"`
	Content  string          `json:"content"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Created  time.Time       `json:"created"`
}

// Store is a database of sessions and messages.
type Store struct {
	db       *sql.DB
	postgres bool
}

// migrations are applied in order; the schema_version table says how far.
var migrations = []string{
	`CREATE TABLE sessions (
		id TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		profile TEXT NOT NULL,
		created BIGINT NOT NULL
	);
	CREATE INDEX sessions_tenant ON sessions(tenant);
	CREATE TABLE messages (
		session TEXT NOT NULL REFERENCES sessions(id),
		seq BIGINT NOT NULL,
		role TEXT NOT NULL,
		content TEXT NOT NULL,
		metadata TEXT,
		created BIGINT NOT NULL,
		PRIMARY KEY (session, seq)
	);`,
	`CREATE TABLE jobs (
		id TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		tool TEXT NOT NULL,
		status TEXT NOT NULL,
		input TEXT NOT NULL,
		result TEXT,
		created BIGINT NOT NULL,
		updated BIGINT NOT NULL
	);
	CREATE INDEX jobs_tenant ON jobs(tenant);`,
	// Sessions keyed by (tenant, id): an ID taken by one tenant is free
	// for another. The old tables are renamed, copied and dropped, as
	// SQLite cannot change a primary key in place; constraints are named
	// so that PostgreSQL's new indexes do not collide with the renamed
	// tables' (sessions_pkey, messages_pkey).
	`ALTER TABLE messages RENAME TO messages_v2;
	ALTER TABLE sessions RENAME TO sessions_v2;
	CREATE TABLE sessions (
		tenant TEXT NOT NULL,
		id TEXT NOT NULL,
		profile TEXT NOT NULL,
		created BIGINT NOT NULL,
		CONSTRAINT sessions_tenant_id PRIMARY KEY (tenant, id)
	);
	CREATE TABLE messages (
		tenant TEXT NOT NULL,
		session TEXT NOT NULL,
		seq BIGINT NOT NULL,
		role TEXT NOT NULL,
		content TEXT NOT NULL,
		metadata TEXT,
		created BIGINT NOT NULL,
		CONSTRAINT messages_tenant_session_seq PRIMARY KEY (tenant, session, seq),
		CONSTRAINT messages_session FOREIGN KEY (tenant, session) REFERENCES sessions (tenant, id)
	);
	INSERT INTO sessions (tenant, id, profile, created) SELECT tenant, id, profile, created FROM sessions_v2;
	INSERT INTO messages (tenant, session, seq, role, content, metadata, created)
		SELECT s.tenant, m.session, m.seq, m.role, m.content, m.metadata, m.created FROM messages_v2 m JOIN sessions_v2 s ON s.id = m.session;
	DROP TABLE messages_v2;
	DROP TABLE sessions_v2;`,
	// Jobs owned by an instance under a renewed lease, with an
	// idempotency key (NULL when none: NULLs never collide), the session
	// or protocol that started them, a cancel asked of the instance that
	// runs them, and an error of the job itself (an interrupted call).
	`ALTER TABLE jobs ADD COLUMN instance TEXT NOT NULL DEFAULT '';
	ALTER TABLE jobs ADD COLUMN lease BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE jobs ADD COLUMN idem_key TEXT;
	ALTER TABLE jobs ADD COLUMN origin TEXT NOT NULL DEFAULT '';
	ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE jobs ADD COLUMN error TEXT;
	CREATE UNIQUE INDEX jobs_tenant_key ON jobs(tenant, idem_key);
	CREATE INDEX jobs_instance ON jobs(instance, status);
	CREATE INDEX jobs_updated ON jobs(status, updated);`,
	// Receipts: one hash chain per tenant, numbered from 1 (receipts.go):
	// the record is the receipt's canonical encoding (the bytes its hash
	// covers), beside it the call's arguments and recorded inputs for
	// replay; and the signatures of chain heads.
	`CREATE TABLE receipts (
		tenant TEXT NOT NULL,
		seq BIGINT NOT NULL,
		hash TEXT NOT NULL,
		prev TEXT NOT NULL,
		call_id TEXT NOT NULL,
		record TEXT NOT NULL,
		args TEXT,
		inputs TEXT,
		CONSTRAINT receipts_tenant_seq PRIMARY KEY (tenant, seq)
	);
	CREATE INDEX receipts_call ON receipts(tenant, call_id);
	CREATE TABLE receipt_signatures (
		tenant TEXT NOT NULL,
		seq BIGINT NOT NULL,
		hash TEXT NOT NULL,
		at BIGINT NOT NULL,
		signature TEXT NOT NULL,
		CONSTRAINT receipt_signatures_tenant_seq PRIMARY KEY (tenant, seq)
	);`,
}

// Open opens the store: a PostgreSQL database for a postgres:// or
// postgresql:// URL, else the SQLite database file at path (created if
// needed); then it applies the migrations the database lacks.
func Open(ctx context.Context, path string) (*Store, error) {
	return open(ctx, path, len(migrations))
}

// open is Open with the first n migrations only.
func open(ctx context.Context, path string, n int) (*Store, error) {
	var s *Store
	name := path
	if strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://") {
		db, err := sql.Open("pgx", path)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		db.SetMaxOpenConns(16)
		s, name = &Store{db: db, postgres: true}, redactURL(path)
	} else {
		dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", path, err)
		}
		// One connection: SQLite has one writer.
		db.SetMaxOpenConns(1)
		s = &Store{db: db}
	}
	if err := s.migrate(ctx, n); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("store %s: %w", name, err)
	}
	return s, nil
}

// redactURL drops the password of a database URL for messages.
func redactURL(u string) string {
	if at := strings.LastIndex(u, "@"); at > 0 {
		if i := strings.Index(u, "://"); i > 0 && i+3 < at {
			userinfo := u[i+3 : at]
			if user, _, ok := strings.Cut(userinfo, ":"); ok {
				return u[:i+3] + user + ":***" + u[at:]
			}
		}
	}
	return u
}

// q returns query with the placeholders its backend expects. SQLite
// takes each "?" as written. PostgreSQL takes a dollar sign and the
// placeholder's position instead ($1, $2, ...).
func (s *Store) q(query string) string {
	if !s.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *Store) migrate(ctx context.Context, n int) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.postgres {
		// Servers starting together migrate one after the other.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7316284)`); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	var v int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("the database is at schema version %d; this agenthost knows %d", v, len(migrations))
	}
	for i := v; i < n; i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_version (version) VALUES (?)`), i+1); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Ping checks the database answers (for readiness).
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

func newID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// CreateSession starts a session of tenant with profile.
func (s *Store) CreateSession(ctx context.Context, tenant, profile string) (Session, error) {
	return s.CreateSessionID(ctx, tenant, profile, newID())
}

// ErrTaken was a session ID held by another tenant. Session IDs are
// keyed by tenant now, so no method returns it.
var ErrTaken = errors.New("session id taken")

// CreateSessionID starts the tenant's session with a caller-chosen ID (an
// AG-UI thread ID), or returns the tenant's session of that ID if it has
// one: clients creating one thread at the same moment all get it.
// Another tenant's session of the same ID is another session.
func (s *Store) CreateSessionID(ctx context.Context, tenant, profile, id string) (Session, error) {
	if tenant == "" {
		return Session{}, errors.New("store: no tenant")
	}
	// Insert if absent, then read: a check before the insert would race
	// with another client's insert.
	created := time.Now().UTC().Truncate(time.Millisecond)
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO sessions (tenant, id, profile, created) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, id) DO NOTHING`), tenant, id, profile, created.UnixMilli())
	if err != nil {
		return Session{}, fmt.Errorf("store: %w", err)
	}
	return s.Session(ctx, tenant, id)
}

// Session returns the tenant's session id, or ErrNotFound.
func (s *Store) Session(ctx context.Context, tenant, id string) (Session, error) {
	ses := Session{ID: id, Tenant: tenant}
	var ms int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT profile, created FROM sessions WHERE tenant = ? AND id = ?`), tenant, id).Scan(&ses.Profile, &ms)
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, ErrNotFound
	}
	if err != nil {
		return Session{}, fmt.Errorf("store: %w", err)
	}
	ses.Created = time.UnixMilli(ms).UTC()
	return ses, nil
}

// AppendMessage adds m to the tenant's session (Seq and Created are
// set) and returns it once it is durable.
func (s *Store) AppendMessage(ctx context.Context, tenant, session string, m Message) (Message, error) {
	if len(m.Content) > MaxContent {
		return Message{}, fmt.Errorf("store: the content is %d bytes; the limit is %d", len(m.Content), MaxContent)
	}
	if len(m.Metadata) > 0 {
		if len(m.Metadata) > MaxMetadata {
			return Message{}, fmt.Errorf("store: the metadata is %d bytes; the limit is %d", len(m.Metadata), MaxMetadata)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(m.Metadata, &obj); err != nil {
			return Message{}, fmt.Errorf("store: the metadata is not a JSON object: %w", err)
		}
	}
	switch m.Role {
	case "user", "assistant", "tool", "system":
	default:
		return Message{}, fmt.Errorf("store: role %q: want user, assistant, tool or system", m.Role)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Message{}, fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	// Lock the session row (PostgreSQL; SQLite has one writer) so that
	// concurrent appends number messages without a gap or a repeat.
	lock := `SELECT id FROM sessions WHERE tenant = ? AND id = ?`
	if s.postgres {
		lock += ` FOR UPDATE`
	}
	var got string
	err = tx.QueryRowContext(ctx, s.q(lock), tenant, session).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, ErrNotFound
	}
	if err != nil {
		return Message{}, fmt.Errorf("store: %w", err)
	}
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE tenant = ? AND session = ?`), tenant, session).Scan(&m.Seq); err != nil {
		return Message{}, fmt.Errorf("store: %w", err)
	}
	m.Created = time.Now().UTC().Truncate(time.Millisecond)
	var meta any
	if len(m.Metadata) > 0 {
		meta = string(m.Metadata)
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO messages (tenant, session, seq, role, content, metadata, created) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		tenant, session, m.Seq, m.Role, m.Content, meta, m.Created.UnixMilli()); err != nil {
		return Message{}, fmt.Errorf("store: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Message{}, fmt.Errorf("store: %w", err)
	}
	return m, nil
}

// Messages returns the tenant's session's messages in order.
func (s *Store) Messages(ctx context.Context, tenant, session string) ([]Message, error) {
	if _, err := s.Session(ctx, tenant, session); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT seq, role, content, metadata, created FROM messages WHERE tenant = ? AND session = ? ORDER BY seq`), tenant, session)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	out := []Message{}
	for rows.Next() {
		var m Message
		var meta sql.NullString
		var ms int64
		if err := rows.Scan(&m.Seq, &m.Role, &m.Content, &meta, &ms); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		if meta.Valid {
			m.Metadata = json.RawMessage(meta.String)
		}
		m.Created = time.UnixMilli(ms).UTC()
		out = append(out, m)
	}
	return out, rows.Err()
}

// ToolStat counts the stored calls of one tool with one outcome.
type ToolStat struct {
	Tenant string `json:"tenant"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
	Code   string `json:"code,omitempty"`
	Calls  int64  `json:"calls"`
}

// ToolStats counts the tool messages of tenant ("" for every tenant) by
// tool, status and error code: the failure analytics of the audit.
func (s *Store) ToolStats(ctx context.Context, tenant string) ([]ToolStat, error) {
	field := func(path string) string {
		if s.postgres {
			// metadata is TEXT holding a JSON object.
			parts := strings.Split(path, ".")
			expr := "(messages.metadata::jsonb)"
			for i, p := range parts {
				op := "->"
				if i == len(parts)-1 {
					op = "->>"
				}
				expr += op + "'" + p + "'"
			}
			return expr
		}
		return "json_extract(messages.metadata, '$." + path + "')"
	}
	rows, err := s.db.QueryContext(ctx, s.q(`
		SELECT messages.tenant,
		       COALESCE(`+field("tool_id")+`, `+field("tool_agent_output.tool_name")+`, ''),
		       COALESCE(`+field("tool_agent_output.status")+`, ''),
		       COALESCE(`+field("tool_agent_output.error.code")+`, ''),
		       COUNT(*)
		FROM messages
		WHERE messages.role = 'tool' AND (? = '' OR messages.tenant = ?)
		GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`), tenant, tenant)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	out := []ToolStat{}
	for rows.Next() {
		var st ToolStat
		if err := rows.Scan(&st.Tenant, &st.Tool, &st.Status, &st.Code, &st.Calls); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		out = append(out, st)
	}
	return out, rows.Err()
}
