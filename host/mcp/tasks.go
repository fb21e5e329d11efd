package mcp

import (
	"bufio"
	"bytes"
	"cmp"
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

// tasks links a server to the engine its tasks are jobs of.
type tasks struct {
	mu       sync.Mutex
	e        *jobs.Engine // Options.Jobs, or the server's own, made at its first task
	own      *store.Store // the own engine's in-memory store
	tenant   string
	sessions map[*sdk.ServerSession]string // the origin of each session with tasks
	draining bool
	ctx      context.Context // ends at close: the progress notifiers stop
	cancel   context.CancelFunc
}

// engine is the engine of the tasks; it makes the server's own (over an
// in-memory store) at the first task of a server without Options.Jobs.
func (s *Server) engine() (*jobs.Engine, error) {
	ts := &s.tasks
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.e != nil {
		return ts.e, nil
	} else if ts.ctx.Err() != nil {
		return nil, jobs.ErrDraining
	}
	st, err := store.Open(ts.ctx, ":memory:")
	if err == nil {
		ts.e, err = jobs.New(ts.ctx, jobs.Options{Store: st, MaxQueued: MaxTasks, TTL: DefaultTaskTTL, Logger: s.log.Named("tasks"),
			Run: func(ctx context.Context, _, tool string, args json.RawMessage) (abi.Envelope, error) {
				return s.h.Call(ctx, tool, args), nil
			}})
		if err != nil {
			st.Close()
			return nil, err
		}
		ts.own = st
	}
	return ts.e, err
}

// origin is the origin of ss's tasks ("" when it has none), made at its
// first task when create is set: a random name, as stdio sessions have
// no ID. The end of the session cancels its unfinished tasks, which
// nobody else may see.
func (s *Server) origin(ss *sdk.ServerSession, create bool) string {
	ts := &s.tasks
	ts.mu.Lock()
	defer ts.mu.Unlock()
	o, ok := ts.sessions[ss]
	if ok || !create {
		return o
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	o = "mcp:" + hex.EncodeToString(b[:])
	ts.sessions[ss] = o
	go func() {
		_ = ss.Wait()
		ts.mu.Lock()
		delete(ts.sessions, ss)
		ts.mu.Unlock()
		e, err := s.engine()
		for after := ""; err == nil; {
			var page []store.Job
			if page, err = e.List(ts.ctx, ts.tenant, jobs.ListOptions{Origin: o, After: after}); len(page) == 0 {
				return
			}
			for _, j := range page {
				if !j.Ended() {
					_, _ = e.Cancel(ts.ctx, ts.tenant, j.ID)
				}
			}
			after = page[len(page)-1].ID
		}
	}()
	return o
}

// close stops the progress notifiers and the server's own engine (its
// running tasks end interrupted, their guests stopped).
func (ts *tasks) close() {
	ts.mu.Lock()
	ts.cancel()
	own, st := ts.own, ts.own != nil
	e := ts.e
	ts.mu.Unlock()
	if st {
		e.Close()
		own.Close()
	}
}

// Drain makes the server refuse new tasks (the internal error), while
// the running ones go on; Wait then waits for them. Calls that are not
// tasks are served as before.
func (s *Server) Drain() {
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	s.tasks.draining = true
	if s.tasks.own != nil {
		s.tasks.e.Drain()
	}
}

// Wait waits for the running tasks' calls to end, or for ctx. Call Drain
// first, so that no task starts meanwhile. With Options.Jobs, the
// engine's owner waits for its jobs.
func (s *Server) Wait(ctx context.Context) error {
	s.tasks.mu.Lock()
	e, own := s.tasks.e, s.tasks.own != nil
	s.tasks.mu.Unlock()
	if !own {
		return nil
	}
	return e.Wait(ctx)
}

// TaskDone returns a channel closed when the task id's call has ended
// (its result is then recorded); closed at once when this server runs
// no such call.
func (s *Server) TaskDone(id string) <-chan struct{} {
	if e, err := s.engine(); err == nil {
		if ch := e.Done(s.tasks.tenant, id); ch != nil {
			return ch
		}
	}
	ch := make(chan struct{})
	close(ch)
	return ch
}

// callTool makes a plain tools/call's call: with Options.Jobs through
// the engine, so that it holds a place of the tenant's limit of calls at
// once as tasks, jobs and serve's calls do; without, on the host. A call
// the engine would not run answers an envelope that says why, and that
// it did not run.
func (s *Server) callTool(ctx context.Context, tool string, args json.RawMessage) abi.Envelope {
	if s.jobs == nil {
		return s.h.Call(ctx, tool, args)
	}
	env, err := s.jobs.Call(ctx, s.tasks.tenant, tool, args)
	var lim *jobs.LimitError
	switch {
	case err == nil:
		return env
	case errors.As(err, &lim):
		return abi.Failure(tool, abi.Errorf(abi.CodeToolError, "the call did not run: %s", lim.Error()).
			WithDetails(map[string]any{"limit": "tenant", "retryAfterMs": lim.RetryAfter.Milliseconds()}))
	case ctx.Err() != nil, errors.Is(err, jobs.ErrDraining):
		return abi.Failure(tool, abi.Errorf(abi.CodeCancelled, "the call did not run: %s", err.Error()))
	}
	return abi.Failure(tool, abi.Errorf(abi.CodeInternal, "the call could not be run: %s", err.Error()))
}

// invalidParams is the JSON-RPC error for a request about a task that
// cannot be served.
func invalidParams(format string, a ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
}

// internalError is the JSON-RPC error of a task the engine could not
// serve.
func internalError(format string, a ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(format, a...)}
}

// startJob starts a task's call as a job of origin, once the origin's
// quota (MaxSessionTasks; on the server's own engine, MaxTasks in all)
// has room.
func (s *Server) startJob(ctx context.Context, origin, tool string, args json.RawMessage) (*jobs.Engine, store.Job, error) {
	s.tasks.mu.Lock()
	draining := s.tasks.draining
	s.tasks.mu.Unlock()
	e, err := s.engine()
	if draining || errors.Is(err, jobs.ErrDraining) || errors.Is(err, context.Canceled) {
		return nil, store.Job{}, internalError("the server is shutting down: it takes no new task")
	}
	quota, n := MaxSessionTasks, 0
	if err == nil {
		n, err = e.Count(ctx, s.tasks.tenant, origin, quota)
	}
	if err == nil && n < quota && s.jobs == nil {
		quota = MaxTasks
		n, err = e.Count(ctx, s.tasks.tenant, "", quota)
	}
	if err == nil && n >= quota {
		err = fmt.Errorf("too many tasks: %d kept, the limit (tasks are kept for %s after they end)", n, e.TTL())
	}
	var j store.Job
	if err == nil {
		j, err = e.Start(ctx, s.tasks.tenant, jobs.Request{Tool: tool, Args: args, Origin: origin})
	}
	if err != nil {
		return nil, store.Job{}, internalError("the task cannot be started: %s", err.Error())
	}
	return e, j, nil
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
	return TaskFailed, res.Content[0].(*sdk.TextContent).Text, res
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
	e, err := s.engine()
	if err != nil {
		return nil, store.Job{}, internalError("%s", err.Error())
	}
	j, err := e.Get(ctx, s.tasks.tenant, id)
	if errors.Is(err, jobs.ErrNotFound) || (err == nil && (origin == "" || j.Origin != origin)) {
		return nil, store.Job{}, invalidParams("no task %q (unknown, or its ttl has passed)", id)
	} else if err != nil {
		return nil, store.Job{}, internalError("%s", err.Error())
	}
	return e, j, nil
}

// taskCallParams are the params of a task-augmented tools/call. Its
// "task" (a ttl the client would like) is not read: a task is kept for
// its engine's TTL, the ttl every task shows.
type taskCallParams struct {
	sdk.ParamsBase
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
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
	s.tasks.e, s.tasks.tenant = s.jobs, cmp.Or(s.tenant, "local")
	s.tasks.sessions = map[*sdk.ServerSession]string{}
	s.tasks.ctx, s.tasks.cancel = context.WithCancel(context.Background())
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
// A progressToken gets a progress notification at each change of the
// job, from the engine's events, until it ends or the server closes.
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
		if ev, err := e.Events(s.tasks.ctx, s.tasks.tenant, j.ID); err == nil {
			go func() {
				for j := range ev {
					status, message, _ := taskState(j)
					_ = ss.NotifyProgress(s.tasks.ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: map[bool]float64{true: 1}[j.Ended()],
						Total: 1, Message: status + ": " + message, Meta: sdk.Meta{metaRelatedTask: map[string]string{"taskId": j.ID}}})
				}
			}()
		}
	}
	return &createTaskResult{Task: s.taskInfoOf(e, j)}, nil
}

// taskResult waits for the task to end and answers what the call would
// have answered, tied to the task by _meta.
func (s *Server) taskResult(ctx context.Context, ss *sdk.ServerSession, p *taskParams) (*sdk.CallToolResult, error) {
	e, j, err := s.taskJob(ctx, s.origin(ss, false), p.id())
	if err == nil {
		j, err = e.WaitJob(ctx, s.tasks.tenant, j.ID)
	}
	_, _, res := taskState(j)
	return res, err
}

// listTasks pages through the session's tasks, oldest first; the cursor
// is the ID of the last task of the page before.
func (s *Server) listTasks(ctx context.Context, ss *sdk.ServerSession, p *listTasksParams) (*listTasksResult, error) {
	res := &listTasksResult{Tasks: []taskInfo{}}
	origin, cursor := s.origin(ss, false), ""
	if p != nil {
		cursor = p.Cursor
	}
	e, _, err := s.taskJob(ctx, origin, cursor)
	if cursor == "" {
		e, err = s.engine()
	} else if err != nil {
		return nil, invalidParams("the cursor %q is not one this server gave", cursor)
	}
	if err != nil || origin == "" {
		return res, err
	}
	page, err := e.List(ctx, s.tasks.tenant, jobs.ListOptions{Origin: origin, After: cursor, Limit: taskPage})
	for _, j := range page {
		res.Tasks = append(res.Tasks, s.taskInfoOf(e, j))
	}
	if len(page) == taskPage {
		res.NextCursor = page[len(page)-1].ID
	}
	return res, err
}

// cancelTask stops a running task's call (the guest is stopped) and
// answers the task once it has ended. An ended task is refused with
// invalid params, as the revision requires, its final state in the
// error's data: the cancel changes nothing.
func (s *Server) cancelTask(ctx context.Context, ss *sdk.ServerSession, p *taskParams) (*taskResult, error) {
	e, j, err := s.taskJob(ctx, s.origin(ss, false), p.id())
	if err != nil {
		return nil, err
	}
	if !j.Ended() {
		j, err = e.Cancel(ctx, s.tasks.tenant, j.ID)
		return &taskResult{taskInfo: s.taskInfoOf(e, j)}, err
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
