package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/script"
)

// Defaults of Options.
const (
	DefaultIdle    = 5 * time.Minute
	maxLine        = 8 << 20 // a JSON-RPC frame from a server
	maxBackoff     = 30 * time.Second
	firstBackoff   = 200 * time.Millisecond
	connectTimeout = 30 * time.Second
	maxResultBytes = 16 << 20
)

// Options configure a Runner.
type Options struct {
	Policy *policy.Policy
	// Lock holds the pinned definitions.
	Lock *Lock
	// Spawn starts a stdio server under isolation (the script runner's).
	Spawn func(ctx context.Context, c script.SpawnConfig) (*script.Process, error)
	// Grant is the grant of a server's process (its securityContext under
	// the policy).
	Grant func(server string) *policy.Grant
	// Protected are files no server's process may reach (the policy, the
	// lock file, the auth file): a server whose cwd, program or grant
	// would expose one does not start.
	Protected []string
	// Idle stops a server unused that long (DefaultIdle when 0).
	Idle   time.Duration
	Logger hclog.Logger
}

// Runner runs imported tools (handler type "mcp"), one session per
// server: started on the first call, restarted with back-off when it
// fails, stopped when idle.
type Runner struct {
	o       Options
	mu      sync.Mutex
	servers map[string]*server
	life    context.Context
	stop    context.CancelFunc
}

type server struct {
	mu      sync.Mutex
	session *sdk.ClientSession
	// stop ends the session and releases what it holds (see Connect).
	stop     func()
	verdicts map[string]string // tool → why it must not run ("" = fine)
	failures int
	retryAt  time.Time
	lastErr  error
	lastUse  time.Time
	inflight int
}

// New returns a Runner.
func New(o Options) *Runner {
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{o: o, servers: map[string]*server{}, life: ctx, stop: cancel}
	go r.reap()
	return r
}

// Close stops every server and returns once their processes have exited
// and their pipes and connections are closed.
func (r *Runner) Close() error {
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.servers {
		s.mu.Lock()
		s.shutdown()
		s.mu.Unlock()
	}
	return nil
}

// reap stops servers idle for longer than Options.Idle.
func (r *Runner) reap() {
	t := time.NewTicker(min(r.o.Idle/4+time.Millisecond, 30*time.Second))
	defer t.Stop()
	for {
		select {
		case <-r.life.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		for name, s := range r.servers {
			s.mu.Lock()
			if s.session != nil && s.inflight == 0 && time.Since(s.lastUse) > r.o.Idle {
				r.o.Logger.Debug("stopping an idle MCP server", "server", name)
				s.shutdown()
			}
			s.mu.Unlock()
		}
		r.mu.Unlock()
	}
}

func (s *server) shutdown() {
	if s.stop != nil {
		s.stop()
	}
	s.session, s.stop = nil, nil
}

// Connect starts or reaches the server and returns a session with its
// tool definitions (for pinning and diffs). The caller calls stop, which
// closes the session, ends the server's process and waits for it to exit
// (its pipes closed), and closes idle HTTP connections.
func (r *Runner) Connect(ctx context.Context, name string) (_ *sdk.ClientSession, _ []Definition, _ func(), err error) {
	cfg, ok := r.o.Policy.MCPServers[name]
	if !ok {
		return nil, nil, nil, fmt.Errorf("mcp: no server %q in the policy's mcpServers", name)
	}
	sctx, cancel := context.WithCancel(r.life)
	var t sdk.Transport
	var proc *script.Process
	var hc *http.Client
	var cs *sdk.ClientSession
	stop := func() {
		if cs != nil {
			cs.Close()
		}
		cancel()
		if proc != nil {
			// The session may never have owned them (a failed start).
			proc.Stdin.Close()
			proc.Stdout.Close()
			_ = proc.Wait()
		}
		if hc != nil {
			hc.CloseIdleConnections()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	if cfg.Remote() {
		if hc, err = r.remoteClient(cfg); err != nil {
			return nil, nil, nil, fmt.Errorf("mcp server %s: %w", name, err)
		}
		t = &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: hc, MaxRetries: -1}
	} else {
		proc, err = r.o.Spawn(sctx, script.SpawnConfig{Command: cfg.Command, Args: cfg.Args, Env: cfg.Env, Dir: cfg.Cwd, Grant: r.o.Grant(name), Protected: r.o.Protected})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("mcp server %s: %w", name, err)
		}
		t = &sdk.IOTransport{Reader: proc.Stdout, Writer: proc.Stdin, MaxLineLength: maxLine}
	}
	cctx, ccancel := context.WithTimeout(ctx, connectTimeout)
	defer ccancel()
	cs, err = sdk.NewClient(&sdk.Implementation{Name: "agenthost", Version: "1"}, nil).Connect(cctx, t, nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("mcp server %s: connect: %w%s", name, err, stderrOf(proc))
	}
	var defs []Definition
	for tool, lerr := range cs.Tools(cctx, nil) {
		if lerr != nil {
			return nil, nil, nil, fmt.Errorf("mcp server %s: tools/list: %w", name, lerr)
		}
		d := Definition{Name: tool.Name, Title: tool.Title, Description: tool.Description}
		d.InputSchema, _ = json.Marshal(tool.InputSchema)
		if tool.OutputSchema != nil {
			d.OutputSchema, _ = json.Marshal(tool.OutputSchema)
		}
		if tool.Annotations != nil {
			d.Annotations, _ = json.Marshal(tool.Annotations)
		}
		defs = append(defs, d)
		if len(defs) > 1000 {
			return nil, nil, nil, fmt.Errorf("mcp server %s: more than 1000 tools", name)
		}
	}
	return cs, defs, stop, nil
}

func stderrOf(p *script.Process) string {
	if p == nil {
		return ""
	}
	lines := p.Stderr.Lines()
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return " (stderr: " + strings.Join(lines, " | ") + ")"
}

// session returns the server's live session, starting it when needed
// (after the back-off of earlier failures).
func (r *Runner) session(ctx context.Context, name string) (*server, error) {
	r.mu.Lock()
	s := r.servers[name]
	if s == nil {
		s = &server{}
		r.servers[name] = s
	}
	r.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastUse = time.Now()
	if s.session != nil {
		return s, nil
	}
	if wait := time.Until(s.retryAt); wait > 0 {
		return nil, fmt.Errorf("the MCP server %s failed to start (%v); next try in %s", name, s.lastErr, wait.Round(time.Millisecond))
	}
	cs, defs, stop, err := r.Connect(ctx, name)
	if err != nil {
		s.failures++
		s.retryAt = time.Now().Add(min(firstBackoff<<min(s.failures-1, 10), maxBackoff))
		s.lastErr = err
		return nil, err
	}
	s.failures, s.lastErr = 0, nil
	s.session, s.stop = cs, stop
	// Rug-pull check: a tool whose definition differs from its pin does
	// not run.
	s.verdicts = map[string]string{}
	live := map[string]Definition{}
	for _, d := range defs {
		live[d.Name] = d
	}
	for tool, p := range r.o.Lock.Servers[name] {
		d, ok := live[tool]
		switch {
		case !ok:
			s.verdicts[tool] = "the server no longer offers it"
		case d.Hash() != p.SHA256:
			s.verdicts[tool] = "its definition changed since it was pinned: " + strings.Join(changedFields(p.Definition, d), ", ")
		}
	}
	go func() {
		_ = cs.Wait()
		s.mu.Lock()
		if s.session == cs {
			// The session ended on its own (a crash, garbage on the
			// stream): end its process too, or it lingers until Close.
			s.shutdown()
		}
		s.mu.Unlock()
	}()
	return s, nil
}

// Prepare binds an imported tool to its server.
func (r *Runner) Prepare(_ context.Context, t *manifest.Tool, g *policy.Grant) (runner.Prepared, error) {
	if _, ok := r.o.Policy.MCPServers[t.Handler.Server]; !ok {
		return nil, abi.Errorf(abi.CodeLoadError, "tool %s: the MCP server %q is not in the policy", t.ToolID, t.Handler.Server)
	}
	return &prepared{r: r, t: t, grant: g}, nil
}

type prepared struct {
	r     *Runner
	t     *manifest.Tool
	grant *policy.Grant
}

// Run calls the tool on its server under the grant's timeout and output
// cap. The result is the call's structured content when it has some,
// else its text (a JSON string); isError is a TOOL_ERROR with the text.
func (p *prepared) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
	name, tool := p.t.Handler.Server, p.t.Handler.Tool
	s, err := p.r.session(ctx, name)
	if err != nil {
		return runner.Result{Err: abi.Errorf(abi.CodeToolError, "%s", err.Error())}, nil
	}
	s.mu.Lock()
	verdict := s.verdicts[tool]
	cs := s.session
	s.inflight++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight--
		s.lastUse = time.Now()
		s.mu.Unlock()
	}()
	if verdict != "" {
		return runner.Result{Err: abi.Errorf(abi.CodeLoadError, "tool %s does not run: %s; review it (agenthost mcp-import diff) and pin it again (agenthost mcp-import pin)", p.t.ToolID, verdict)}, nil
	}
	if cs == nil {
		return runner.Result{Err: abi.Errorf(abi.CodeToolError, "the MCP server %s stopped", name)}, nil
	}
	timeout := p.grant.Limits.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var args map[string]any
	if len(req.Input) > 0 {
		if err := json.Unmarshal(req.Input, &args); err != nil {
			return runner.Result{Err: abi.Errorf(abi.CodeInvalidArguments, "arguments: %s", err.Error())}, nil
		}
	}
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		switch {
		case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
			return runner.Result{Err: abi.Errorf(abi.CodeTimeout, "the MCP server did not answer within %s", timeout)}, nil
		case ctx.Err() != nil:
			return runner.Result{Err: abi.Errorf(abi.CodeCancelled, "cancelled")}, nil
		}
		return runner.Result{Err: abi.Errorf(abi.CodeToolError, "the MCP server %s: %s", name, err.Error())}, nil
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return runner.Result{Err: abi.Errorf(abi.CodeToolError, "%s", clipText(text.String()))}, nil
	}
	var out []byte
	if res.StructuredContent != nil {
		out, err = json.Marshal(res.StructuredContent)
	} else {
		out, err = json.Marshal(text.String())
	}
	if err != nil {
		return runner.Result{Err: abi.Errorf(abi.CodeInvalidOutput, "the MCP server's result: %s", err.Error())}, nil
	}
	limit := p.grant.Limits.MaxOutputBytes
	if limit <= 0 || limit > maxResultBytes {
		limit = maxResultBytes
	}
	if int64(len(out)) > limit {
		return runner.Result{Err: abi.Errorf(abi.CodeOutputLimit, "the result is %d bytes; the limit is %d", len(out), limit)}, nil
	}
	return runner.Result{Output: out}, nil
}

func clipText(s string) string {
	if len(s) > 4096 {
		return s[:4096] + "…"
	}
	return s
}
