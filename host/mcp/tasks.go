package mcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/jobs"
)

// Task-augmented tool calls (MCP tasks, protocol revision 2025-11-25).
//
// A tools/call whose params hold "task" returns a task at once; the call
// runs in the background, and the client polls tasks/get, waits with
// tasks/result, pages through tasks/list or stops the call with
// tasks/cancel (the guest is stopped). Tasks live in the server's memory,
// are visible only to the session that made them, and are forgotten once
// they have ended and their ttl has passed.
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

// Task limits: the ttl when the client asks for none and the longest one
// granted, the polling interval suggested, and how many tasks a session
// and the whole server keep at once.
const (
	DefaultTaskTTL  = 10 * time.Minute
	MaxTaskTTL      = time.Hour
	TaskPoll        = 250 * time.Millisecond
	MaxSessionTasks = 256
	MaxTasks        = 4096
)

// metaRelatedTask is the _meta key that ties a message to its task.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// callAsTask is the method a task-augmented tools/call is renamed to.
const callAsTask = "agenthost/tools/callAsTask"

// taskPage is how many tasks one tasks/list answer holds.
const taskPage = 100

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

// task is one task-augmented call.
type task struct {
	id      string
	session *sdk.ServerSession
	created time.Time
	ttl     time.Duration
	cancel  context.CancelFunc
	done    chan struct{} // closed when the call has ended and result is set

	// Guarded by tasks.mu.
	status, message string
	updated         time.Time
	result          *sdk.CallToolResult
}

// info is t on the wire; the caller holds tasks.mu.
func (t *task) info() taskInfo {
	return taskInfo{TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: t.created.Format(time.RFC3339Nano), LastUpdatedAt: t.updated.Format(time.RFC3339Nano),
		TTL: t.ttl.Milliseconds(), PollInterval: TaskPoll.Milliseconds()}
}

// terminal reports whether t has ended; the caller holds tasks.mu.
func (t *task) terminal() bool { return t.status != TaskWorking }

// tasks is a server's task table.
type tasks struct {
	mu       sync.Mutex
	byID     map[string]*task
	order    []*task                    // by creation
	open     map[*sdk.ServerSession]int // tasks kept per session
	closed   bool                       // Close: no new task
	draining bool                       // Drain: no new task
	runs     sync.WaitGroup
}

// sweep forgets the ended tasks whose ttl has passed; the caller holds mu.
func (ts *tasks) sweep(now time.Time) {
	ts.dropIf(func(t *task) bool { return t.terminal() && now.After(t.created.Add(t.ttl)) })
}

// dropIf forgets the tasks gone reports, cancelling those still running;
// the caller holds mu.
func (ts *tasks) dropIf(gone func(*task) bool) {
	kept := ts.order[:0]
	for _, t := range ts.order {
		if !gone(t) {
			kept = append(kept, t)
			continue
		}
		t.cancel()
		delete(ts.byID, t.id)
		if ts.open[t.session]--; ts.open[t.session] <= 0 {
			delete(ts.open, t.session)
		}
	}
	clear(ts.order[len(kept):])
	ts.order = kept
}

// endSession waits for ss to end, then cancels its running tasks and
// forgets all of its tasks (nobody else may see them).
func (ts *tasks) endSession(ss *sdk.ServerSession) {
	_ = ss.Wait()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.dropIf(func(t *task) bool { return t.session == ss })
}

// close cancels the running tasks and waits for their calls to end.
func (ts *tasks) close() {
	ts.mu.Lock()
	ts.closed = true
	for _, t := range ts.order {
		t.cancel()
	}
	ts.mu.Unlock()
	ts.runs.Wait()
}

// invalidParams is the JSON-RPC error for a request about a task that
// cannot be served.
func invalidParams(format string, a ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
}

// lookup returns the session's task named by p.
func (ts *tasks) lookup(ss *sdk.ServerSession, p *taskParams) (*task, error) {
	if p == nil || p.TaskID == "" {
		return nil, invalidParams("the params hold no taskId")
	}
	id := p.TaskID
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.sweep(time.Now())
	if t, ok := ts.byID[id]; ok && t.session == ss {
		return t, nil
	}
	return nil, invalidParams("no task %q (unknown, or its ttl has passed)", id)
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
	must := func(err error) {
		if err != nil {
			panic(err) // only a name clash with a standard method fails, fixed at build time
		}
	}
	must(sdk.AddReceivingCustomMethod(s.srv, callAsTask, s.startTask))
	must(sdk.AddReceivingCustomMethod(s.srv, "tasks/get", func(_ context.Context, ss *sdk.ServerSession, p *taskParams) (*taskResult, error) {
		t, err := s.tasks.lookup(ss, p)
		if err != nil {
			return nil, err
		}
		s.tasks.mu.Lock()
		defer s.tasks.mu.Unlock()
		return &taskResult{taskInfo: t.info()}, nil
	}))
	must(sdk.AddReceivingCustomMethod(s.srv, "tasks/result", s.taskResult))
	must(sdk.AddReceivingCustomMethod(s.srv, "tasks/list", s.listTasks))
	must(sdk.AddReceivingCustomMethod(s.srv, "tasks/cancel", s.cancelTask))
}

// startTask records a task, starts its call and answers at once.
func (s *Server) startTask(ctx context.Context, ss *sdk.ServerSession, p *taskCallParams) (*createTaskResult, error) {
	if p == nil {
		return nil, invalidParams("a tools/call needs params")
	}
	s.mu.Lock()
	id, ok := s.ids[p.Name]
	s.mu.Unlock()
	if !ok {
		return nil, invalidParams("unknown tool %q", p.Name)
	}
	ttl := DefaultTaskTTL
	if p.Task.TTL != nil {
		ttl = min(max(time.Duration(*p.Task.TTL)*time.Millisecond, time.Second), MaxTaskTTL)
	}
	now := time.Now().UTC()
	ts := &s.tasks
	ts.mu.Lock()
	ts.sweep(now)
	if ts.closed || ts.draining {
		ts.mu.Unlock()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server is shutting down: it takes no new task"}
	}
	if n := ts.open[ss]; n >= MaxSessionTasks || len(ts.order) >= MaxTasks {
		ts.mu.Unlock()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("too many tasks: this session holds %d (its limit is %d), the server %d (its limit is %d); tasks are kept until their ttl passes",
				n, MaxSessionTasks, len(ts.order), MaxTasks)}
	}
	req := &sdk.CallToolRequest{Session: ss, Params: &sdk.CallToolParamsRaw{Meta: p.Meta, Name: p.Name, Arguments: p.Arguments}}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	taskID, stop, run, err := s.taskCall(ctx, cancel, id, p.Arguments, "mcp:"+ss.ID(), func(ctx context.Context) abi.Envelope { return s.call(ctx, req, id) })
	if err != nil {
		ts.mu.Unlock()
		cancel()
		return nil, err
	}
	t := &task{id: taskID, session: ss, created: now, ttl: ttl, cancel: stop, done: make(chan struct{}),
		status: TaskWorking, message: "the call is running", updated: now}
	ts.byID[t.id] = t
	ts.order = append(ts.order, t)
	if ts.open[ss]++; ts.open[ss] == 1 {
		go ts.endSession(ss)
	}
	info := t.info()
	ts.runs.Add(1)
	ts.mu.Unlock()

	go func() {
		defer ts.runs.Done()
		defer cancel()
		env := run(cctx)
		res := resultOf(p.Name, env)
		res.Meta = maps.Clone(res.Meta)
		if res.Meta == nil {
			res.Meta = sdk.Meta{}
		}
		res.Meta[metaRelatedTask] = map[string]string{"taskId": t.id}
		ts.mu.Lock()
		t.result, t.updated = res, time.Now().UTC()
		if t.status == TaskWorking {
			t.status, t.message = TaskCompleted, "the call succeeded"
			if env.Error != nil && env.Error.Code == abi.CodeCancelled {
				t.status, t.message = TaskCancelled, "the call was cancelled"
			} else if res.IsError {
				t.status, t.message = TaskFailed, "the call failed"
				if len(res.Content) > 0 {
					if tc, ok := res.Content[0].(*sdk.TextContent); ok {
						t.message = tc.Text
					}
				}
			}
		}
		ts.mu.Unlock()
		close(t.done)
	}()
	return &createTaskResult{Task: info}, nil
}

// cancelByID cancels the running task id, whichever session made it, and
// waits for its call to end (ctx bounds the wait); it reports whether
// there was such a task.
func (s *Server) cancelByID(ctx context.Context, id string) bool {
	ts := &s.tasks
	ts.mu.Lock()
	t, ok := ts.byID[id]
	if !ok || t.terminal() {
		ts.mu.Unlock()
		return false
	}
	t.status, t.message, t.updated = TaskCancelled, "the task was cancelled by request", time.Now().UTC()
	ts.mu.Unlock()
	t.cancel()
	select {
	case <-t.done:
	case <-ctx.Done():
	}
	return true
}

// Drain makes the server refuse new tasks (the internal error), while
// the running ones go on; Wait then waits for them. Calls that are not
// tasks are served as before.
func (s *Server) Drain() {
	s.tasks.mu.Lock()
	s.tasks.draining = true
	s.tasks.mu.Unlock()
}

// Wait waits for the running tasks' calls to end, or for ctx. Call Drain
// first, so that no task starts meanwhile.
func (s *Server) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.tasks.runs.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TaskDone returns a channel closed when the task id's call has ended
// (its result is then recorded), or nil when the server runs no such
// task.
func (s *Server) TaskDone(id string) <-chan struct{} {
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	if t, ok := s.tasks.byID[id]; ok {
		return t.done
	}
	return nil
}

// taskResult waits for the task to end and answers what the call would
// have answered, tied to the task by _meta.
func (s *Server) taskResult(ctx context.Context, ss *sdk.ServerSession, p *taskParams) (*sdk.CallToolResult, error) {
	t, err := s.tasks.lookup(ss, p)
	if err != nil {
		return nil, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	return t.result, nil
}

// listTasks pages through the session's tasks, oldest first; the cursor
// is the ID of the last task of the page before.
func (s *Server) listTasks(_ context.Context, ss *sdk.ServerSession, p *listTasksParams) (*listTasksResult, error) {
	ts := &s.tasks
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.sweep(time.Now())
	cursor := ""
	if p != nil {
		cursor = p.Cursor
	}
	started := cursor == ""
	if !started {
		if t, ok := ts.byID[cursor]; !ok || t.session != ss {
			return nil, invalidParams("the cursor %q is not one this server gave", cursor)
		}
	}
	res := &listTasksResult{Tasks: []taskInfo{}}
	for _, t := range ts.order {
		if t.session != ss {
			continue
		}
		if !started {
			started = t.id == cursor
			continue
		}
		if len(res.Tasks) == taskPage {
			res.NextCursor = res.Tasks[len(res.Tasks)-1].TaskID
			break
		}
		res.Tasks = append(res.Tasks, t.info())
	}
	return res, nil
}

// cancelTask stops a running task's call (the guest is stopped) and
// answers the task, cancelled.
func (s *Server) cancelTask(ctx context.Context, ss *sdk.ServerSession, p *taskParams) (*taskResult, error) {
	t, err := s.tasks.lookup(ss, p)
	if err != nil {
		return nil, err
	}
	if !s.cancelByID(ctx, t.id) {
		s.tasks.mu.Lock()
		defer s.tasks.mu.Unlock()
		return nil, invalidParams("the task %q has ended (%s); it cannot be cancelled", t.id, t.status)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	return &taskResult{taskInfo: t.info()}, nil
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

// taskCall prepares a task's call. With Options.Jobs it starts the call
// as a job of the tenant (its limits and budget hold; the task's ID is
// the job's) and run waits for the job's one final answer, while stop
// cancels the job. Without, the call runs in process under a random ID:
// run makes it, and stop is cancel. The caller holds tasks.mu.
func (s *Server) taskCall(ctx context.Context, cancel context.CancelFunc, tool string, args json.RawMessage, origin string,
	local func(context.Context) abi.Envelope) (id string, stop func(), run func(context.Context) abi.Envelope, err error) {
	if s.jobs == nil {
		return newTaskID(), cancel, local, nil
	}
	j, err := s.jobs.Start(ctx, s.tenant, jobs.Request{Tool: tool, Args: args, Origin: origin})
	if err != nil {
		return "", nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task cannot be started: " + err.Error()}
	}
	id = j.ID
	stop = func() {
		go func() {
			if _, err := s.jobs.Cancel(context.Background(), s.tenant, id); err != nil {
				s.log.Error("cancelling a task's job", "task", id, "error", err)
			}
		}()
	}
	run = func(ctx context.Context) abi.Envelope {
		j, err := s.jobs.WaitJob(ctx, s.tenant, id)
		switch {
		case err != nil:
			return abi.Failure(tool, abi.Errorf(abi.CodeInternal, "the task's job cannot be read: %s", err.Error()))
		case j.Result != nil:
			return *j.Result
		case j.Error != nil:
			return abi.Failure(tool, abi.Errorf(abi.CodeInternal, "%s: %s", j.Error.Code, j.Error.Message).WithDetails(map[string]any{"job": j.Error.Code}))
		}
		return abi.Failure(tool, abi.Errorf(abi.CodeInternal, "the task's job ended without an answer"))
	}
	return id, stop, run, nil
}

// newTaskID is a random task ID.
func newTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
