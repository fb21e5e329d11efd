package mcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/jobs"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/host/wire"
)

// Task-augmented tool calls (MCP tasks, protocol revision 2025-11-25).
//
// A tools/call whose params hold "task" returns a task at once; the call
// runs in the background, and the client polls tasks/get, waits with
// tasks/result, pages through tasks/list or stops the call with
// tasks/cancel (the guest is stopped). A task is a job of the job engine
// (host/jobs), of which this file is only the protocol: the task's ID is
// the job's, its state and result are the job's record, its limits the
// tenant's. The engine is Options.Jobs (serve's, in its store), else the
// server's own over an in-memory store. A session sees only its own
// tasks (the jobs' origin names it), a tenant only its own (the engine's
// rule: another tenant's task is "not found", as an unknown one is); the
// end of a session cancels its unfinished tasks, which nobody else may
// see.
//
// The SDK has no task support, so the server adds it at its edges: the
// transports rename a task-augmented tools/call to callAsTask before the
// SDK decodes it (its params type has no "task"), the four task methods
// are custom methods, and a middleware adds the tasks capability to
// initialize and execution.taskSupport to every listed tool.

// Task statuses.
const (
	TaskWorking   = "working"
	TaskCompleted = "completed"
	TaskFailed    = "failed"
	TaskCancelled = "cancelled"
)

// Task limits: how long the server's own engine keeps an ended task (the
// ttl every task shows: an engine's keeps its jobs for its TTL, whatever
// a client asks), the polling interval suggested, and how many tasks a
// session, and the server's own engine, keep at once.
const (
	DefaultTaskTTL  = 10 * time.Minute
	TaskPoll        = 250 * time.Millisecond
	MaxSessionTasks = 256
	MaxTasks        = 4096
)

// metaRelatedTask is the _meta key that ties a message to its task.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// callAsTask is the method a task-augmented tools/call is renamed to.
const callAsTask = "agenthost/tools/callAsTask"

// taskPage is how many tasks one tasks/list answer holds.
const taskPage = jobs.MaxListPage

// originModern is the origin of the 2026-07-28 extension's tasks, which
// belong to no session.
const originModern = "mcp"

// taskInfo is a task on the wire.
type taskInfo struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
}

// tasks links a server to its job engine.
type tasks struct {
	mu       sync.Mutex
	own      *jobs.Engine                  // the server's own engine, made at its first task
	ownStore *store.Store                  // its in-memory store
	sessions map[*sdk.ServerSession]string // the origin of each session with tasks
	draining bool
	closed   bool
	watchers sync.WaitGroup // progress notifiers
	stop     chan struct{}  // closed by close: the notifiers end
}

// engine is the engine tasks run on: Options.Jobs, else the server's own.
func (s *Server) engine() (*jobs.Engine, error) {
	if s.jobs != nil {
		return s.jobs, nil
	}
	ts := &s.tasks
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return nil, jobs.ErrDraining
	}
	if ts.own != nil {
		return ts.own, nil
	}
	ctx := context.Background()
	st, err := store.Open(ctx, ":memory:")
	if err != nil {
		return nil, err
	}
	e, err := jobs.New(ctx, jobs.Options{Store: st, MaxQueued: MaxTasks, TTL: DefaultTaskTTL, Logger: s.log.Named("tasks"),
		Run: func(ctx context.Context, _, tool string, args json.RawMessage) (abi.Envelope, error) {
			return s.h.Call(ctx, tool, args), nil
		}})
	if err != nil {
		st.Close()
		return nil, err
	}
	ts.own, ts.ownStore = e, st
	return e, nil
}

// taskTenant is the tenant whose jobs the tasks are.
func (s *Server) taskTenant() string {
	if s.tenant == "" {
		return "local"
	}
	return s.tenant
}

// origin is the origin of ss's tasks, made (and its end watched) at its
// first task when create is set; "" when it has none.
func (s *Server) origin(ss *sdk.ServerSession, create bool) string {
	ts := &s.tasks
	ts.mu.Lock()
	defer ts.mu.Unlock()
	o, ok := ts.sessions[ss]
	if !ok && create {
		// A random name, not the session's ID: stdio sessions have none.
		var b [16]byte
		_, _ = rand.Read(b[:])
		o = "mcp:" + hex.EncodeToString(b[:])
		ts.sessions[ss] = o
		go s.endSession(ss, o)
	}
	return o
}

// endSession waits for ss to end, then cancels its unfinished tasks.
func (s *Server) endSession(ss *sdk.ServerSession, origin string) {
	_ = ss.Wait()
	s.tasks.mu.Lock()
	delete(s.tasks.sessions, ss)
	s.tasks.mu.Unlock()
	e, err := s.engine()
	if err != nil {
		return
	}
	ctx := context.Background()
	tenant := s.taskTenant()
	for after := ""; ; {
		page, err := e.List(ctx, tenant, jobs.ListOptions{Origin: origin, After: after})
		if err != nil || len(page) == 0 {
			return
		}
		for _, j := range page {
			if !j.Ended() {
				if _, err := e.Cancel(ctx, tenant, j.ID); err != nil {
					s.log.Error("cancelling a task of an ended session", "task", j.ID, "error", err)
				}
			}
		}
		after = page[len(page)-1].ID
	}
}

// close stops the progress notifiers and the server's own engine (its
// running tasks end interrupted, their guests stopped).
func (ts *tasks) close() {
	ts.mu.Lock()
	if !ts.closed {
		close(ts.stop)
	}
	ts.closed, ts.draining = true, true
	own, st := ts.own, ts.ownStore
	ts.own = nil
	ts.mu.Unlock()
	ts.watchers.Wait()
	if own != nil {
		own.Close()
		st.Close()
	}
}

// Drain makes the server refuse new tasks (the internal error), while
// the running ones go on; Wait then waits for them. Calls that are not
// tasks are served as before.
func (s *Server) Drain() {
	s.tasks.mu.Lock()
	s.tasks.draining = true
	own := s.tasks.own
	s.tasks.mu.Unlock()
	if own != nil {
		own.Drain()
	}
}

// Wait waits for the running tasks' calls to end, or for ctx. Call Drain
// first, so that no task starts meanwhile. With Options.Jobs, the
// engine's owner waits for its jobs.
func (s *Server) Wait(ctx context.Context) error {
	s.tasks.mu.Lock()
	own := s.tasks.own
	s.tasks.mu.Unlock()
	if own == nil {
		return nil
	}
	return own.Wait(ctx)
}

// TaskDone returns a channel closed when the task id's call has ended
// (its result is then recorded); closed at once when this server runs
// no such call.
func (s *Server) TaskDone(id string) <-chan struct{} {
	if e, err := s.engine(); err == nil {
		if ch := e.Done(s.taskTenant(), id); ch != nil {
			return ch
		}
	}
	ch := make(chan struct{})
	close(ch)
	return ch
}

// invalidParams is the JSON-RPC error for a request about a task that
// cannot be served.
func invalidParams(format string, a ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
}

// startError is the JSON-RPC error of a task the engine would not start.
func startError(err error) error {
	if errors.Is(err, jobs.ErrDraining) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server is shutting down: it takes no new task"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task cannot be started: " + err.Error()}
}

// startJob starts a task's call as a job of origin, once the origin's
// quota (MaxSessionTasks; MaxTasks in all on the server's own engine)
// has room.
func (s *Server) startJob(ctx context.Context, origin, tool string, args json.RawMessage) (*jobs.Engine, store.Job, error) {
	s.tasks.mu.Lock()
	draining := s.tasks.draining
	s.tasks.mu.Unlock()
	e, err := s.engine()
	if draining || err != nil {
		return nil, store.Job{}, startError(cmpErr(err, jobs.ErrDraining))
	}
	tenant := s.taskTenant()
	n, err := e.Count(ctx, tenant, origin, MaxSessionTasks)
	if err == nil && n >= MaxSessionTasks {
		err = fmt.Errorf("too many tasks: this session holds %d, its limit; tasks are kept for %s after they end", n, e.TTL())
	}
	if err == nil && s.jobs == nil {
		if n, err = e.Count(ctx, tenant, "", MaxTasks); err == nil && n >= MaxTasks {
			err = fmt.Errorf("too many tasks: the server holds %d, its limit; tasks are kept for %s after they end", n, e.TTL())
		}
	}
	if err != nil {
		return nil, store.Job{}, startError(err)
	}
	j, err := e.Start(ctx, tenant, jobs.Request{Tool: tool, Args: args, Origin: origin})
	if err != nil {
		return nil, store.Job{}, startError(err)
	}
	return e, j, nil
}

// cmpErr is err, or def when err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// taskState is a job as a task: its status, message and, once ended,
// the result the call would have answered, tied to the task by _meta.
func taskState(j store.Job) (status, message string, res *sdk.CallToolResult) {
	var env abi.Envelope
	switch {
	case j.Result != nil:
		env = *j.Result
	case j.Error != nil:
		env = abi.Failure(j.Tool, abi.Errorf(abi.CodeMayHaveRun, "%s", j.Error.Message))
	case j.Status == store.JobQueued:
		return TaskWorking, "the call waits for one of the tenant's places", nil
	case j.CancelRequested:
		return TaskWorking, "the call is running; its cancel was asked", nil
	default:
		return TaskWorking, "the call is running", nil
	}
	res = resultOf(wire.Name(j.Tool), env)
	res.Meta = maps.Clone(res.Meta)
	if res.Meta == nil {
		res.Meta = sdk.Meta{}
	}
	res.Meta[metaRelatedTask] = map[string]string{"taskId": j.ID}
	switch {
	case env.Error == nil:
		return TaskCompleted, "the call succeeded", res
	case env.Error.Code == abi.CodeCancelled:
		return TaskCancelled, "the call was cancelled", res
	}
	message = "the call failed"
	if tc, ok := res.Content[0].(*sdk.TextContent); ok {
		message = tc.Text
	}
	return TaskFailed, message, res
}

// taskInfoOf is j as a task on the wire.
func (s *Server) taskInfoOf(e *jobs.Engine, j store.Job) taskInfo {
	status, message, _ := taskState(j)
	return taskInfo{TaskID: j.ID, Status: status, StatusMessage: message,
		CreatedAt: j.Created.Format(time.RFC3339Nano), LastUpdatedAt: j.Updated.Format(time.RFC3339Nano),
		TTL: e.TTL().Milliseconds(), PollInterval: TaskPoll.Milliseconds()}
}

// taskJob returns the job of the task id of origin: another session's,
// another tenant's, an unknown or a forgotten task is not found alike.
func (s *Server) taskJob(ctx context.Context, origin, id string) (*jobs.Engine, store.Job, error) {
	if id == "" {
		return nil, store.Job{}, invalidParams("the params hold no taskId")
	}
	e, err := s.engine()
	if err != nil {
		return nil, store.Job{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	j, err := e.Get(ctx, s.taskTenant(), id)
	if errors.Is(err, jobs.ErrNotFound) || (err == nil && (origin == "" || j.Origin != origin)) {
		return nil, store.Job{}, invalidParams("no task %q (unknown, or its ttl has passed)", id)
	}
	if err != nil {
		return nil, store.Job{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return e, j, nil
}

// taskCallParams are the params of a task-augmented tools/call.
type taskCallParams struct {
	sdk.ParamsBase
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Task      struct {
		TTL *int64 `json:"ttl,omitempty"`
	} `json:"task"`
}

// taskParams are the params of tasks/get, tasks/result and tasks/cancel.
type taskParams struct {
	sdk.ParamsBase
	TaskID string `json:"taskId"`
}

// listTasksParams are the params of tasks/list.
type listTasksParams struct {
	sdk.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

// createTaskResult answers a task-augmented tools/call.
type createTaskResult struct {
	sdk.ResultBase
	Task taskInfo `json:"task"`
}

// taskResult answers tasks/get and tasks/cancel.
type taskResult struct {
	sdk.ResultBase
	taskInfo
}

// listTasksResult answers tasks/list.
type listTasksResult struct {
	sdk.ResultBase
	Tasks      []taskInfo `json:"tasks"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

// The results advertised edits. Each embeds the SDK's result, so the
// SDK's later touches (the server's identity in _meta, the result type
// of newer protocol revisions) still reach it; the edit is applied when
// it is sent.
type (
	initializeResult struct{ *sdk.InitializeResult }
	discoverResult   struct{ *sdk.DiscoverResult }
	listToolsResult  struct{ *sdk.ListToolsResult }
)

// MarshalJSON adds the tasks capability.
func (r initializeResult) MarshalJSON() ([]byte, error) {
	return edited(r.InitializeResult, addTasksCapability)
}

// MarshalJSON adds the tasks capability.
func (r discoverResult) MarshalJSON() ([]byte, error) {
	return edited(r.DiscoverResult, addTasksCapability)
}

// MarshalJSON marks every tool's taskSupport.
func (r listToolsResult) MarshalJSON() ([]byte, error) {
	return edited(r.ListToolsResult, addTaskSupport)
}

// serveTasks adds the task methods to s's SDK server.
func (s *Server) serveTasks() {
	s.tasks.sessions, s.tasks.stop = map[*sdk.ServerSession]string{}, make(chan struct{})
	must := func(err error) {
		if err != nil {
			panic(err) // only a name clash with a standard method fails, fixed at build time
		}
	}
	must(sdk.AddReceivingCustomMethod(s.srv, callAsTask, s.startTask))
	must(sdk.AddReceivingCustomMethod(s.srv, "tasks/get", func(ctx context.Context, ss *sdk.ServerSession, p *taskParams) (*taskResult, error) {
		e, j, err := s.taskJob(ctx, s.origin(ss, false), p.id())
		if err != nil {
			return nil, err
		}
		return &taskResult{taskInfo: s.taskInfoOf(e, j)}, nil
	}))
	must(sdk.AddReceivingCustomMethod(s.srv, "tasks/result", s.taskResult))
	must(sdk.AddReceivingCustomMethod(s.srv, "tasks/list", s.listTasks))
	must(sdk.AddReceivingCustomMethod(s.srv, "tasks/cancel", s.cancelTask))
}

// id is the task ID of p ("" without params).
func (p *taskParams) id() string {
	if p == nil {
		return ""
	}
	return p.TaskID
}

// startTask starts the call as a job and answers with its task at once.
// A progressToken gets a notification at each change of the job.
func (s *Server) startTask(ctx context.Context, ss *sdk.ServerSession, p *taskCallParams) (*createTaskResult, error) {
	if p == nil {
		return nil, invalidParams("a tools/call needs params")
	}
	s.mu.Lock()
	tool, ok := s.ids[p.Name]
	s.mu.Unlock()
	if !ok {
		return nil, invalidParams("unknown tool %q", p.Name)
	}
	e, j, err := s.startJob(ctx, s.origin(ss, true), tool, p.Arguments)
	if err != nil {
		return nil, err
	}
	if token := p.Meta["progressToken"]; token != nil {
		s.notifyProgress(e, ss, j.ID, token)
	}
	return &createTaskResult{Task: s.taskInfoOf(e, j)}, nil
}

// notifyProgress sends a progress notification for token at each change
// of the task id's job, from the engine's events, until it ends (or the
// server closes).
func (s *Server) notifyProgress(e *jobs.Engine, ss *sdk.ServerSession, id string, token any) {
	ctx, cancel := context.WithCancel(context.Background())
	ev, err := e.Events(ctx, s.taskTenant(), id)
	if err != nil {
		cancel()
		return
	}
	s.tasks.mu.Lock()
	if s.tasks.closed {
		s.tasks.mu.Unlock()
		cancel()
		return
	}
	s.tasks.watchers.Add(1)
	s.tasks.mu.Unlock()
	go func() {
		defer s.tasks.watchers.Done()
		defer cancel()
		go func() {
			select {
			case <-s.tasks.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		for j := range ev {
			status, message, _ := taskState(j)
			p := 0.0
			if j.Ended() {
				p = 1
			}
			_ = ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: 1, Message: status + ": " + message,
				Meta: sdk.Meta{metaRelatedTask: map[string]string{"taskId": id}}})
		}
	}()
}

// taskResult waits for the task to end and answers what the call would
// have answered, tied to the task by _meta.
func (s *Server) taskResult(ctx context.Context, ss *sdk.ServerSession, p *taskParams) (*sdk.CallToolResult, error) {
	e, j, err := s.taskJob(ctx, s.origin(ss, false), p.id())
	if err != nil {
		return nil, err
	}
	if j, err = e.WaitJob(ctx, s.taskTenant(), j.ID); err != nil {
		return nil, err
	}
	_, _, res := taskState(j)
	return res, nil
}

// listTasks pages through the session's tasks, oldest first; the cursor
// is the ID of the last task of the page before.
func (s *Server) listTasks(ctx context.Context, ss *sdk.ServerSession, p *listTasksParams) (*listTasksResult, error) {
	res := &listTasksResult{Tasks: []taskInfo{}}
	origin := s.origin(ss, false)
	cursor := ""
	if p != nil {
		cursor = p.Cursor
	}
	if cursor != "" {
		if _, _, err := s.taskJob(ctx, origin, cursor); err != nil {
			return nil, invalidParams("the cursor %q is not one this server gave", cursor)
		}
	}
	if origin == "" {
		return res, nil
	}
	e, err := s.engine()
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	page, err := e.List(ctx, s.taskTenant(), jobs.ListOptions{Origin: origin, After: cursor, Limit: taskPage})
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	for _, j := range page {
		res.Tasks = append(res.Tasks, s.taskInfoOf(e, j))
	}
	if len(page) == taskPage {
		res.NextCursor = page[len(page)-1].ID
	}
	return res, nil
}

// cancelTask stops a running task's call (the guest is stopped) and
// answers the task once it has ended. A task that has ended is refused
// with invalid params, as the revision requires, its final state in the
// error's data: the cancel changes nothing.
func (s *Server) cancelTask(ctx context.Context, ss *sdk.ServerSession, p *taskParams) (*taskResult, error) {
	e, j, err := s.taskJob(ctx, s.origin(ss, false), p.id())
	if err != nil {
		return nil, err
	}
	if !j.Ended() {
		if j, err = e.Cancel(ctx, s.taskTenant(), j.ID); err != nil {
			return nil, err
		}
		return &taskResult{taskInfo: s.taskInfoOf(e, j)}, nil
	}
	info := s.taskInfoOf(e, j)
	data, _ := json.Marshal(info)
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Data: data,
		Message: fmt.Sprintf("the task %q has ended (%s); it cannot be cancelled", j.ID, info.Status)}
}

// advertised is res with the tasks capability added to initialize (and
// server/discover) and execution.taskSupport "optional" to each tool of
// tools/list.
func advertised(res sdk.Result) sdk.Result {
	switch r := res.(type) {
	case *sdk.InitializeResult:
		return initializeResult{r}
	case *sdk.DiscoverResult:
		return discoverResult{r}
	case *sdk.ListToolsResult:
		return listToolsResult{r}
	}
	return res
}

// addTasksCapability declares tasks/list, tasks/cancel and task-augmented
// tools/call among a result's capabilities.
func addTasksCapability(m map[string]json.RawMessage) error {
	var caps map[string]any
	if err := json.Unmarshal(m["capabilities"], &caps); err != nil {
		return err
	}
	if caps == nil {
		caps = map[string]any{}
	}
	caps["tasks"] = map[string]any{"list": struct{}{}, "cancel": struct{}{},
		"requests": map[string]any{"tools": map[string]any{"call": struct{}{}}}}
	var err error
	m["capabilities"], err = json.Marshal(caps)
	return err
}

// addTaskSupport marks every tool of a tools/list result as one a client
// may run as a task.
func addTaskSupport(m map[string]json.RawMessage) error {
	var tools []map[string]any
	if err := json.Unmarshal(m["tools"], &tools); err != nil {
		return err
	}
	for _, t := range tools {
		t["execution"] = map[string]string{"taskSupport": "optional"}
	}
	var err error
	m["tools"], err = json.Marshal(tools)
	return err
}

// edited is v's JSON with edit applied to its top-level members.
func edited(v any, edit func(map[string]json.RawMessage) error) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if err := edit(m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// taskCall is a tools/call made a task-augmented call: its method is
// renamed so that the SDK hands it, "task" and all, to startTask. Any
// other message is returned as it is.
func taskCall(msg jsonrpc.Message) jsonrpc.Message {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !bytes.Contains(req.Params, []byte(`"task"`)) {
		return msg
	}
	var p struct {
		Task json.RawMessage `json:"task"`
	}
	if json.Unmarshal(req.Params, &p) != nil || len(p.Task) == 0 || p.Task[0] != '{' {
		return msg
	}
	req.Method = callAsTask
	return req
}

// taskCallBody is taskCall for one HTTP request body: the body as it is
// unless it holds a task-augmented tools/call.
func taskCallBody(b []byte) []byte {
	if !bytes.Contains(b, []byte(`"task"`)) {
		return b
	}
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return b
	}
	if req, ok := taskCall(msg).(*jsonrpc.Request); ok && req.Method == callAsTask {
		if out, err := jsonrpc.EncodeMessage(req); err == nil {
			return out
		}
	}
	return b
}

// taskLines is a stream of newline-delimited JSON-RPC messages whose
// lines pass through taskCallBody: stdio's form of taskCall, which leaves
// the SDK's own transport in place.
type taskLines struct {
	r    *bufio.Reader
	c    io.Closer
	line []byte // what is left of the current line
	err  error  // the read error after it
	// fast answers plain calls itself (stdio.go); nil without a fast
	// path.
	fast *stdioFast
}

func newTaskLines(r io.ReadCloser) *taskLines {
	return &taskLines{r: bufio.NewReaderSize(r, 64<<10), c: r}
}

// Read reads the rewritten stream.
func (t *taskLines) Read(p []byte) (int, error) {
	for len(t.line) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		t.line, t.err = t.next()
		if t.fast != nil && t.fast.take(bytes.TrimRight(t.line, "\r\n")) {
			t.line = nil // answered on the fast path
		}
	}
	n := copy(p, t.line)
	t.line = t.line[n:]
	return n, nil
}

// next reads the next line and rewrites it. A line longer than the SDK
// takes is passed on as it is, in parts, for the SDK to refuse.
func (t *taskLines) next() ([]byte, error) {
	var line []byte
	for {
		chunk, err := t.r.ReadSlice('\n')
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			if len(line) > sdk.DefaultMaxLineLength {
				return line, nil
			}
			continue
		}
		body := bytes.TrimRight(line, "\r\n")
		return append(taskCallBody(body), line[len(body):]...), err
	}
}

// Close closes the underlying stream.
func (t *taskLines) Close() error { return t.c.Close() }

// taskTransport is a transport (any an embedder passes to Run) whose
// connection passes read messages through taskCall.
type taskTransport struct{ sdk.Transport }

// Connect connects the wrapped transport.
func (t taskTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return taskConn{c}, nil
}

// taskConn is a connection whose reads pass through taskCall.
type taskConn struct{ sdk.Connection }

// Read reads the next message.
func (c taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return nil, err
	}
	return taskCall(msg), nil
}
