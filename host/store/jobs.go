package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agenthost/agenthost/abi"
)

// Job statuses. A job is queued (waiting for one of its tenant's slots),
// running (on the instance that owns it), done (Result holds the call's
// envelope) or interrupted (the instance running it stopped: the call
// may have run, in part or whole, and Error says so).
const (
	JobQueued      = "queued"
	JobRunning     = "running"
	JobDone        = "done"
	JobInterrupted = "interrupted"
)

// CodeMayHaveRun is the error of an interrupted job: its outcome is not
// known, so a client must not take it for a call that did not run.
const CodeMayHaveRun = "MAY_HAVE_RUN"

// MaxKey bounds an idempotency key.
const MaxKey = 256

// ErrConflict is an idempotency key the tenant used before for another
// call (another tool or other arguments).
var ErrConflict = errors.New("the idempotency key was used for another call")

// Job is a tool call that outlives its request: an asynchronous call of
// the HTTP API or an MCP task.
type Job struct {
	ID     string `json:"id"`
	Tenant string `json:"-"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
	// Input is the call's arguments (compact JSON).
	Input json.RawMessage `json:"input"`
	// Result is the call's envelope once the job is done.
	Result *abi.Envelope `json:"result,omitempty"`
	// Error is the job's own error: MAY_HAVE_RUN for an interrupted job.
	Error *JobError `json:"error,omitempty"`
	// Key is the idempotency key the job was started with, if any.
	Key string `json:"idempotencyKey,omitempty"`
	// Origin says what started the job ("http", or "mcp:" and the MCP
	// session), so that a session lists only its own tasks.
	Origin string `json:"origin,omitempty"`
	// Instance is the server that runs (or ran) the job.
	Instance string `json:"instance,omitempty"`
	// CancelRequested is set by a cancel that reached another instance
	// than the job's: its instance stops the call at its next renewal.
	CancelRequested bool      `json:"cancelRequested,omitempty"`
	Created         time.Time `json:"created"`
	Updated         time.Time `json:"updated"`
}

// JobError is a job's own error (not the call's, which is in Result).
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Ended reports whether the job has its final answer.
func (j Job) Ended() bool { return j.Status == JobDone || j.Status == JobInterrupted }

// NewJob is a job to record.
type NewJob struct {
	Tool   string
	Input  json.RawMessage
	Key    string
	Origin string
	// Instance owns the job until Lease; Status is JobQueued or
	// JobRunning.
	Instance string
	Lease    time.Time
	Status   string
}

const jobColumns = `id, tenant, tool, status, input, result, error, idem_key, origin, instance, cancel_requested, created, updated`

// CreateJob records a job of tenant and returns it with created true;
// or, when the tenant holds a job of the same idempotency key, that job
// with created false (ErrConflict when it was another call).
func (s *Store) CreateJob(ctx context.Context, tenant string, n NewJob) (Job, bool, error) {
	if tenant == "" {
		return Job{}, false, errors.New("store: no tenant")
	}
	if len(n.Input) > MaxContent {
		return Job{}, false, fmt.Errorf("store: the input is %d bytes; the limit is %d", len(n.Input), MaxContent)
	}
	if len(n.Key) > MaxKey {
		return Job{}, false, fmt.Errorf("store: the idempotency key is %d bytes; the limit is %d", len(n.Key), MaxKey)
	}
	input := CompactJSON(n.Input)
	if n.Status == "" {
		n.Status = JobRunning
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	var key any
	if n.Key != "" {
		key = n.Key
	}
	id := newID()
	res, err := s.db.ExecContext(ctx, s.q(`INSERT INTO jobs (id, tenant, tool, status, input, idem_key, origin, instance, lease, created, updated)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, idem_key) DO NOTHING`),
		id, tenant, n.Tool, n.Status, string(input), key, n.Origin, n.Instance, n.Lease.UnixMilli(), now.UnixMilli(), now.UnixMilli())
	if err != nil {
		return Job{}, false, fmt.Errorf("store: %w", err)
	}
	if c, _ := res.RowsAffected(); c == 1 {
		return Job{ID: id, Tenant: tenant, Tool: n.Tool, Status: n.Status, Input: input, Key: n.Key, Origin: n.Origin,
			Instance: n.Instance, Created: now, Updated: now}, true, nil
	}
	// The key was taken (perhaps a moment ago by a retry racing this one).
	j, err := s.scanJob(s.db.QueryRowContext(ctx, s.q(`SELECT `+jobColumns+` FROM jobs WHERE tenant = ? AND idem_key = ?`), tenant, n.Key))
	if err != nil {
		return Job{}, false, err
	}
	if j.Tool != n.Tool || !bytes.Equal(j.Input, input) {
		return j, false, ErrConflict
	}
	return j, false, nil
}

// CompactJSON is b as the store keeps a job's input: compact JSON (b
// itself when it is not JSON; {} when empty), so that a retried call
// matches whatever its white space.
func CompactJSON(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// StartJob moves the tenant's queued job to running; it reports false
// when the job was no longer queued (cancelled meanwhile).
func (s *Store) StartJob(ctx context.Context, tenant, id string) (bool, error) {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE jobs SET status = ?, updated = ? WHERE id = ? AND tenant = ? AND status = ?`),
		JobRunning, time.Now().UTC().UnixMilli(), id, tenant, JobQueued)
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// FinishJob gives the tenant's job its final answer, the call's
// envelope, if it has none yet; it returns the job as it is then, with
// finished false when the job had ended already (a job has one final
// answer: the first).
func (s *Store) FinishJob(ctx context.Context, tenant, id string, env abi.Envelope) (Job, bool, error) {
	b, err := json.Marshal(env)
	if err != nil {
		return Job{}, false, fmt.Errorf("store: %w", err)
	}
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE jobs SET status = ?, result = ?, updated = ? WHERE id = ? AND tenant = ? AND status IN (?, ?)`),
		JobDone, string(b), time.Now().UTC().UnixMilli(), id, tenant, JobQueued, JobRunning)
	if err != nil {
		return Job{}, false, fmt.Errorf("store: %w", err)
	}
	n, _ := res.RowsAffected()
	j, err := s.Job(ctx, tenant, id)
	return j, n == 1, err
}

// Job returns the tenant's job id, or ErrNotFound.
func (s *Store) Job(ctx context.Context, tenant, id string) (Job, error) {
	return s.scanJob(s.db.QueryRowContext(ctx, s.q(`SELECT `+jobColumns+` FROM jobs WHERE id = ? AND tenant = ?`), id, tenant))
}

// JobByKey returns the tenant's job started with the idempotency key,
// or ErrNotFound.
func (s *Store) JobByKey(ctx context.Context, tenant, key string) (Job, error) {
	return s.scanJob(s.db.QueryRowContext(ctx, s.q(`SELECT `+jobColumns+` FROM jobs WHERE tenant = ? AND idem_key = ?`), tenant, key))
}

// Jobs returns the tenant's jobs of origin ("" for all), oldest first,
// after the job of ID after ("" for the first page), at most limit.
func (s *Store) Jobs(ctx context.Context, tenant, origin, after string, limit int) ([]Job, error) {
	var since int64
	if after != "" {
		j, err := s.Job(ctx, tenant, after)
		if err != nil {
			return nil, err
		}
		since = j.Created.UnixMilli()
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+jobColumns+` FROM jobs
		WHERE tenant = ? AND (? = '' OR origin = ?) AND (created > ? OR (created = ? AND id > ?))
		ORDER BY created, id LIMIT ?`), tenant, origin, origin, since, since, after, limit)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	out := []Job{}
	for rows.Next() {
		j, err := s.scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

type scanner interface{ Scan(...any) error }

func (s *Store) scanJob(row scanner) (Job, error) {
	var j Job
	var input string
	var result, jerr, key sql.NullString
	var cancel, created, updated int64
	err := row.Scan(&j.ID, &j.Tenant, &j.Tool, &j.Status, &input, &result, &jerr, &key, &j.Origin, &j.Instance, &cancel, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Job{}, ErrNotFound
	}
	if err != nil {
		return Job{}, fmt.Errorf("store: %w", err)
	}
	j.Input, j.Key, j.CancelRequested = json.RawMessage(input), key.String, cancel != 0
	if result.Valid {
		j.Result = new(abi.Envelope)
		if err := json.Unmarshal([]byte(result.String), j.Result); err != nil {
			return Job{}, fmt.Errorf("store: job %s: the result is not an envelope: %w", j.ID, err)
		}
	}
	if jerr.Valid {
		j.Error = new(JobError)
		if err := json.Unmarshal([]byte(jerr.String), j.Error); err != nil {
			return Job{}, fmt.Errorf("store: job %s: the error: %w", j.ID, err)
		}
	}
	j.Created, j.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return j, nil
}

// RequestCancel marks the tenant's running job for cancelling by the
// instance that runs it, and returns the job.
func (s *Store) RequestCancel(ctx context.Context, tenant, id string) (Job, error) {
	if _, err := s.db.ExecContext(ctx, s.q(`UPDATE jobs SET cancel_requested = 1 WHERE id = ? AND tenant = ? AND status IN (?, ?)`),
		id, tenant, JobQueued, JobRunning); err != nil {
		return Job{}, fmt.Errorf("store: %w", err)
	}
	return s.Job(ctx, tenant, id)
}

// RenewLeases extends the lease of instance's unfinished jobs to until,
// and returns those of them whose cancel was asked elsewhere.
func (s *Store) RenewLeases(ctx context.Context, instance string, until time.Time) ([]string, error) {
	if _, err := s.db.ExecContext(ctx, s.q(`UPDATE jobs SET lease = ? WHERE instance = ? AND status IN (?, ?)`),
		until.UnixMilli(), instance, JobQueued, JobRunning); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id FROM jobs WHERE instance = ? AND status IN (?, ?) AND cancel_requested = 1`),
		instance, JobQueued, JobRunning)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// InterruptJobs ends the unfinished jobs that no live instance runs:
// those of instance (a previous run of this server; "" names none) and
// those whose lease expired before now. A queued job never started, so it is done,
// CANCELLED; a running one is interrupted: it may have run. It returns
// how many jobs it ended.
func (s *Store) InterruptJobs(ctx context.Context, instance string, now time.Time) (int64, error) {
	jerr, _ := json.Marshal(JobError{Code: CodeMayHaveRun,
		Message: "the server running the call stopped before it answered: the call may have run, in part or whole"})
	env, _ := json.Marshal(abi.Failure("", abi.Errorf(abi.CodeCancelled, "the server stopped before the call started; it did not run")))
	var total int64
	for _, u := range []struct {
		status, set string
		arg         string
	}{{JobRunning, `status = '` + JobInterrupted + `', error = ?`, string(jerr)}, {JobQueued, `status = '` + JobDone + `', result = ?`, string(env)}} {
		res, err := s.db.ExecContext(ctx, s.q(`UPDATE jobs SET `+u.set+`, updated = ? WHERE status = ? AND ((instance = ? AND instance <> '') OR lease < ?)`),
			u.arg, now.UnixMilli(), u.status, instance, now.UnixMilli())
		if err != nil {
			return total, fmt.Errorf("store: %w", err)
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}

// InterruptJob ends the tenant's job as interrupted (its instance stops
// without waiting for the call), unless it has ended already; it returns
// the job as it is then.
func (s *Store) InterruptJob(ctx context.Context, tenant, id, message string) (Job, error) {
	jerr, _ := json.Marshal(JobError{Code: CodeMayHaveRun, Message: message})
	if _, err := s.db.ExecContext(ctx, s.q(`UPDATE jobs SET status = ?, error = ?, updated = ? WHERE id = ? AND tenant = ? AND status IN (?, ?)`),
		JobInterrupted, string(jerr), time.Now().UTC().UnixMilli(), id, tenant, JobQueued, JobRunning); err != nil {
		return Job{}, fmt.Errorf("store: %w", err)
	}
	return s.Job(ctx, tenant, id)
}

// DeleteJobs forgets the ended jobs last updated before t (their results
// were kept for their time) and returns how many.
func (s *Store) DeleteJobs(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM jobs WHERE status IN (?, ?) AND updated < ?`), JobDone, JobInterrupted, before.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	return res.RowsAffected()
}

// ValidKey reports whether key may be an idempotency key: printable
// ASCII, at most MaxKey bytes.
func ValidKey(key string) bool {
	return len(key) <= MaxKey && strings.IndexFunc(key, func(r rune) bool { return r < 0x21 || r > 0x7e }) < 0
}
