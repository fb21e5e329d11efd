// Package agent runs the deliberation loop around a host: it asks a model
// (host/llm) what to do, runs the tool calls it asks for, feeds the results
// back, and stops at the model's final text answer or at the iteration
// cap. Modes: native (the provider's tool calling, wire names, parallel
// calls in one turn), action (the ACTION protocol in plain text, for
// models without tool calling), router (one tools tool with describe) and
// code (one run_code tool: the model writes a program that calls the
// tools as functions; see code.go).
//
// An execution context follows the run: the steps, the last observations,
// the failed attempts (tool, argument hash, code), and per tool what
// failed and what then worked; its failure summary goes into every
// prompt, and a call identical to one that already failed is not run
// again: the model is told so and offered alternatives.
package agent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/observation"
	"github.com/agenthost/agenthost/host/prompt"
	"github.com/agenthost/agenthost/host/wire"
)

// Modes.
const (
	ModeNative = "native"
	ModeAction = "action"
	ModeRouter = "router"
	// ModeCode offers the model one tool, run_code, and the tools as a
	// typed API: it writes a program instead of making many calls.
	ModeCode = "code"
)

// RouterTool is the one tool the model sees in router mode.
const RouterTool = "tools"

// DefaultMaxIterations caps a run when Options.MaxIterations is 0.
const DefaultMaxIterations = 20

// Options configure a run. The zero value of each field means its default.
type Options struct {
	Provider llm.Provider
	Model    string
	// Mode is ModeNative (default), ModeAction, ModeRouter or ModeCode.
	Mode string
	// SystemPrompt comes first in the system message.
	SystemPrompt string
	// MaxIterations caps the model turns (default 20); reaching it ends
	// the run with status partial.
	MaxIterations int
	// History is the conversation so far (user messages, assistant turns
	// with their tool calls, tool results), sent between the system
	// prompt and the task. When it exceeds HistoryTokens its oldest turns
	// are replaced by a summary.
	History []llm.Message
	// HistoryTokens is the budget of History in estimated tokens (about
	// four characters each; default 8000).
	HistoryTokens int
	// Tools, when set, are the only tool IDs the model sees (others are
	// unknown to it); nil means every tool the host lets a model call.
	Tools []string
	// OnEvent, when set, is told of each model turn and tool call.
	OnEvent func(Event)
}

// Event is one step of a run, for progress output.
type Event struct {
	// Kind is "delta" (a piece of the model's text as it streams),
	// "model" (a model turn; Text is its whole text, Calls its tool calls
	// under the host's IDs), "tool_start" (a call begins: Tool, CallID,
	// Args), "tool" (it ended: Status, Duration and Step, its record) or
	// "code_step" (a call a code-mode program made has ended: Tool is its
	// tool ID, Step.ParentCallID the run_code call; the model never sees
	// it as a call of its own).
	// CallIDs are the host's, unique per run; Tool is the name the model
	// used.
	Kind     string           `json:"kind"`
	Calls    []llm.ToolCall   `json:"calls,omitempty"`
	Text     string           `json:"text,omitempty"`
	Tool     string           `json:"tool,omitempty"`
	CallID   string           `json:"callId,omitempty"`
	Args     json.RawMessage  `json:"args,omitempty"`
	Status   string           `json:"status,omitempty"`
	Duration time.Duration    `json:"duration"`
	Step     *ToolAgentOutput `json:"step,omitempty"`
}

// ToolAgentOutput is the canonical record of one tool call. The model
// sees only its text projection (the compact JSON of Result, or the
// observation on failure).
type ToolAgentOutput struct {
	ToolName     string          `json:"tool_name"`
	ToolCallID   string          `json:"tool_call_id"`
	ToolCallArgs json.RawMessage `json:"tool_call_args"`
	Status       string          `json:"status"`
	Result       json.RawMessage `json:"result,omitempty"`
	Error        *abi.Error      `json:"error,omitempty"`
	// UIHints are the manifest's display hints for a successful result,
	// keeping only the JSON pointers that resolve in it.
	UIHints map[string]string `json:"ui_hints,omitempty"`
	// ParentCallID, on a call a code-mode program made, is the run_code
	// call that ran the program.
	ParentCallID string `json:"parent_call_id,omitempty"`
}

// Record is what a front-end stores with a message of a run (its
// metadata), written and read as this one type so that no reader guesses
// at keys: an assistant message's tool calls, or a tool message's step
// with the loaded tool's ID, its ui_schema and how long the call took.
type Record struct {
	ToolCalls  []llm.ToolCall   `json:"tool_calls,omitempty"`
	ToolID     string           `json:"tool_id,omitempty"`
	Output     *ToolAgentOutput `json:"tool_agent_output,omitempty"`
	UISchema   map[string]any   `json:"ui_schema,omitempty"`
	DurationMs *float64         `json:"duration_ms,omitempty"`
}

// Result is the outcome of a run.
type Result struct {
	// Status is "done" (the model answered), "partial" (the iteration
	// cap) or "failed" (the provider failed).
	Status     string            `json:"status"`
	Answer     string            `json:"answer"`
	Iterations int               `json:"iterations"`
	Steps      []ToolAgentOutput `json:"steps"`
	Error      string            `json:"error,omitempty"`
}

// Run runs task on h until the model answers or the cap is reached. Its
// error is non-nil only for bad options; a provider failure is a Result
// with status failed.
func Run(ctx context.Context, h *host.Host, task string, o Options) (Result, error) {
	if o.Provider == nil {
		return Result{}, errors.New("agent: no provider")
	}
	if o.Mode == "" {
		o.Mode = ModeNative
	}
	if o.Mode != ModeNative && o.Mode != ModeAction && o.Mode != ModeRouter && o.Mode != ModeCode {
		return Result{}, fmt.Errorf("agent: mode %q: want native, action, router or code", o.Mode)
	}
	if o.MaxIterations <= 0 {
		o.MaxIterations = DefaultMaxIterations
	}
	if o.HistoryTokens <= 0 {
		o.HistoryTokens = DefaultHistoryTokens
	}
	r := &run{h: h, o: o, res: Result{Steps: []ToolAgentOutput{}}, prefix: newRunPrefix(), modelIDs: map[string]bool{}}
	r.ec.name = r.modelName
	if err := r.tools(); err != nil {
		return Result{}, err
	}
	r.msgs = append([]llm.Message{{Role: llm.RoleSystem}}, FitHistory(o.History, o.HistoryTokens)...)
	r.msgs = append(r.msgs, llm.Message{Role: llm.RoleUser, Content: task})
	for r.res.Iterations < o.MaxIterations {
		r.res.Iterations++
		r.msgs[0].Content = r.system()
		start := time.Now()
		req := llm.Request{Model: o.Model, Messages: r.msgs, Tools: r.defs}
		if o.OnEvent != nil {
			req.OnDelta = func(text string) { r.event(Event{Kind: "delta", Text: text}) }
		}
		resp, err := o.Provider.Complete(ctx, req)
		if err != nil {
			r.res.Status, r.res.Error = "failed", err.Error()
			return r.res, nil
		}
		// The host's call IDs are what clients, history and traces see:
		// a model's own may repeat across runs (a replay's call_1 always
		// does). Its IDs are kept only to answer it.
		hostIDs := make([]string, len(resp.ToolCalls))
		calls := make([]llm.ToolCall, len(resp.ToolCalls))
		for i, tc := range resp.ToolCalls {
			hostIDs[i] = r.newCallID()
			calls[i] = llm.ToolCall{ID: hostIDs[i], Name: tc.Name, Arguments: tc.Arguments}
			// A model that sends no ID, or one it already used (some
			// local servers number every turn's calls from 1), is
			// answered under the host's: results must pair with their
			// calls unambiguously.
			if tc.ID == "" || r.modelIDs[tc.ID] {
				resp.ToolCalls[i].ID = hostIDs[i]
			}
			r.modelIDs[resp.ToolCalls[i].ID] = true
		}
		r.event(Event{Kind: "model", Text: resp.Content, Calls: calls, Duration: time.Since(start)})
		var done bool
		if o.Mode == ModeAction {
			done = r.actionTurn(ctx, resp)
		} else {
			done = r.nativeTurn(ctx, resp, hostIDs)
		}
		if done {
			r.res.Status = "done"
			return r.res, nil
		}
	}
	r.res.Status = "partial"
	r.res.Answer = fmt.Sprintf("Stopped after %d iterations without a final answer. %s", o.MaxIterations, r.ec.summary())
	return r.res, nil
}

// run is the state of one Run.
type run struct {
	h     *host.Host
	o     Options
	res   Result
	msgs  []llm.Message
	defs  []llm.ToolDef
	table *wire.Table
	byID  map[string]*manifest.Tool
	ec    execContext
	// mu guards ec and res.Events while a turn's calls run in parallel.
	mu sync.Mutex
	// prefix and calls make the host's call IDs: unique per run.
	prefix string
	calls  int
	// modelIDs are the call IDs the model has been answered under.
	modelIDs map[string]bool
	// api is code mode's typed API, in the system prompt.
	api string
}

// DefaultHistoryTokens is the history budget when Options.HistoryTokens
// is 0.
const DefaultHistoryTokens = 8000

// newRunPrefix is a random prefix for a run's call IDs, so that two runs
// (in one thread, or replaying one transcript) never share an ID.
func newRunPrefix() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	return hex.EncodeToString(b[:])
}

// newCallID is the host's ID of the run's next tool call: letters,
// digits, '_' and '-' only, as every provider accepts.
func (r *run) newCallID() string {
	r.calls++
	return fmt.Sprintf("call_%s_%d", r.prefix, r.calls)
}

// modelName is a tool's name as the model uses it: its wire name in
// native and router modes, its ID in action mode (the ACTION protocol
// names tools by ID).
func (r *run) modelName(id string) string {
	if r.o.Mode == ModeAction {
		return id
	}
	if n, ok := r.table.Name(id); ok {
		return n
	}
	return wire.Name(id)
}

// tools builds the tool set the model sees.
func (r *run) tools() error {
	allowed := map[string]bool{}
	for _, id := range r.o.Tools {
		allowed[id] = true
	}
	r.byID = map[string]*manifest.Tool{}
	var ids []string
	for _, t := range r.h.Tools(host.Query{}) {
		if len(allowed) > 0 && !allowed[t.ToolID] {
			continue
		}
		r.byID[t.ToolID] = t
		ids = append(ids, t.ToolID)
	}
	tab, err := wire.NewTable(ids)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	r.table = tab
	switch r.o.Mode {
	case ModeRouter:
		r.defs = []llm.ToolDef{routerDef(ids)}
		return nil
	case ModeAction:
		// The catalogue goes in the system prompt: a request for a model
		// without tool calling carries no tools field.
		return nil
	case ModeCode:
		r.defs = []llm.ToolDef{codeDef()}
		return r.codeAPI()
	}
	for _, id := range ids {
		t := r.byID[id]
		n, _ := tab.Name(id)
		// The model sees the schema as the providers accept it; the host
		// still validates the arguments against the manifest's own.
		a := wire.Adapt(t.Parameters)
		params, err := json.Marshal(a.Provider())
		if err != nil {
			return fmt.Errorf("agent: the schema of %s: %w", id, err)
		}
		r.defs = append(r.defs, llm.ToolDef{Name: n, Description: wire.Describe(t.Description, a.Note), Parameters: params, Strict: wire.Strict(a.Provider())})
	}
	return nil
}

func (r *run) event(e Event) {
	if r.o.OnEvent != nil {
		r.mu.Lock()
		r.o.OnEvent(e)
		r.mu.Unlock()
	}
}

// system is the system message of the next turn: the profile's prompt, the
// ACTION protocol and catalogue in action mode, and the failure summary.
func (r *run) system() string {
	var b strings.Builder
	b.WriteString(r.o.SystemPrompt)
	if r.o.Mode == ModeAction {
		var ts []*manifest.Tool
		for _, id := range sortedKeys(r.byID) {
			ts = append(ts, r.byID[id])
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(prompt.Render(ts, prompt.Options{Compact: true}))
	}
	if r.o.Mode == ModeCode {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(r.api)
	}
	if s := r.ec.summary(); s != "" {
		b.WriteString("\n\n" + s)
	}
	return strings.TrimSpace(b.String())
}

// nativeTurn handles a provider turn with tool calls; done when it has
// none (its text is the answer).
func (r *run) nativeTurn(ctx context.Context, resp llm.Response, hostIDs []string) bool {
	if len(resp.ToolCalls) == 0 {
		if strings.TrimSpace(resp.Content) == "" {
			r.msgs = append(r.msgs, llm.Message{Role: llm.RoleUser, Content: "Your last turn was empty. Call a tool or give your final answer."})
			return false
		}
		r.res.Answer = resp.Content
		return true
	}
	r.msgs = append(r.msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
	// The calls of one turn run in parallel (a model sends several only
	// when they are independent); results go back in the turn's order.
	outs := make([]ToolAgentOutput, len(resp.ToolCalls))
	texts := make([]string, len(resp.ToolCalls))
	inner := make([][]ToolAgentOutput, len(resp.ToolCalls)) // code mode's program calls
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallelCalls)
	for i, tc := range resp.ToolCalls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			hc := tc
			hc.ID = hostIDs[i]
			switch r.o.Mode {
			case ModeRouter:
				outs[i], texts[i] = r.route(ctx, hc)
			case ModeCode:
				outs[i], texts[i], inner[i] = r.runCode(ctx, hc)
			default:
				outs[i], texts[i] = r.callTool(ctx, hc.ID, tc.Name, tc.Arguments)
			}
		}()
	}
	wg.Wait()
	for i, tc := range resp.ToolCalls {
		r.res.Steps = append(r.res.Steps, inner[i]...)
		r.res.Steps = append(r.res.Steps, outs[i])
		r.msgs = append(r.msgs, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: texts[i]})
	}
	return false
}

// maxParallelCalls bounds the calls of one turn that run at once.
const maxParallelCalls = 4

// actionTurn handles a text turn in the ACTION protocol; done when it
// holds no ACTION block (its text is the answer).
func (r *run) actionTurn(ctx context.Context, resp llm.Response) bool {
	var allowed func(string) bool
	if len(r.o.Tools) > 0 {
		allowed = func(id string) bool { return r.byID[id] != nil }
	}
	turn := r.h.ExecWith(ctx, resp.Content, host.ExecOptions{Allowed: allowed})
	if turn.Error == nil && len(turn.Calls) == 0 {
		if strings.TrimSpace(resp.Content) == "" {
			r.msgs = append(r.msgs, llm.Message{Role: llm.RoleUser, Content: "Your last turn was empty. Send an ACTION block or your final answer."})
			return false
		}
		r.res.Answer = turn.ResponseText
		return true
	}
	r.msgs = append(r.msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content})
	for i, env := range turn.Results {
		args, _ := json.Marshal(turn.Calls[i].Args)
		out := stepOf(env.ToolID, r.newCallID(), args, env)
		out.UIHints = uiHints(r.byID[env.ToolID], env)
		r.event(Event{Kind: "tool_start", Tool: env.ToolID, CallID: out.ToolCallID, Args: args})
		r.event(Event{Kind: "tool", Tool: env.ToolID, CallID: out.ToolCallID, Status: string(env.Status), Duration: time.Duration(env.DurationMs * float64(time.Millisecond)), Step: &out})
		r.res.Steps = append(r.res.Steps, out)
		r.ec.record(env.ToolID, args, env)
	}
	obs := turn.Observation
	if turn.Error != nil && obs == "" {
		obs = observation.Error("", turn.Error)
	}
	r.ec.observe(obs)
	r.msgs = append(r.msgs, llm.Message{Role: llm.RoleUser, Content: obs})
	return false
}

// callTool runs one native tool call and returns its record and the text
// the model sees.
func (r *run) callTool(ctx context.Context, callID, name, rawArgs string) (ToolAgentOutput, string) {
	id, ok := r.table.ID(name)
	args := json.RawMessage(rawArgs)
	if len(strings.TrimSpace(rawArgs)) == 0 {
		args = json.RawMessage(`{}`)
	}
	var env abi.Envelope
	start := time.Now()
	r.event(Event{Kind: "tool_start", Tool: name, CallID: callID, Args: args})
	switch {
	case !ok:
		env = abi.Failure(name, abi.Errorf(abi.CodeUnknownTool, "unknown tool '%s'; the tools are: %s", name, strings.Join(wireNames(r.defs), ", ")))
	case !json.Valid(args):
		env = abi.Failure(id, abi.Errorf(abi.CodeInvalidArguments, "the arguments are not valid JSON: %s", snippet(rawArgs)))
	default:
		r.mu.Lock()
		prev, failed := r.ec.failedBefore(id, args)
		r.mu.Unlock()
		if failed {
			env = abi.Failure(id, abi.Errorf(prev, "this exact call already failed with %s; it was not run again. Change the arguments or use another tool%s", prev, r.alternatives(id)))
		} else {
			env = r.h.Call(host.WithCallID(ctx, callID), id, args)
		}
	}
	out := stepOf(name, callID, args, env)
	out.UIHints = uiHints(r.byID[id], env)
	r.event(Event{Kind: "tool", Tool: name, CallID: callID, Status: string(env.Status), Duration: time.Since(start), Step: &out})
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		r.ec.record(id, args, env)
	}
	text := string(env.Output)
	if env.Error != nil {
		text = observation.Error(name, env.Error)
	}
	r.ec.observe(text)
	return out, text
}

// alternatives names tools sharing a tag with id.
func (r *run) alternatives(id string) string {
	t := r.byID[id]
	if t == nil || len(t.Tags) == 0 {
		return ""
	}
	tags := map[string]bool{}
	for _, tg := range t.Tags {
		tags[tg] = true
	}
	var alts []string
	for _, oid := range sortedKeys(r.byID) {
		if oid == id {
			continue
		}
		for _, tg := range r.byID[oid].Tags {
			if tags[tg] {
				alts = append(alts, r.modelName(oid))
				break
			}
		}
	}
	if len(alts) == 0 {
		return ""
	}
	return "; tools with overlapping tags: " + strings.Join(alts, ", ")
}

func stepOf(name, callID string, args json.RawMessage, env abi.Envelope) ToolAgentOutput {
	out := ToolAgentOutput{ToolName: name, ToolCallID: callID, ToolCallArgs: args, Status: string(env.Status), Error: env.Error}
	if env.Error == nil {
		out.Result = env.Output
	}
	return out
}

// execContext is the run's memory of what happened.
type execContext struct {
	observations []string                       // the last 10
	failed       map[string]abi.Code            // tool + argument hash -> code
	patterns     map[string]map[abi.Code]string // per tool: failure code -> what then worked
	lastFailure  map[string]abi.Code            // per tool: its latest failure
	// name maps a tool ID to the name the model knows it by.
	name func(id string) string
}

func argsHash(id string, args json.RawMessage) string {
	var v any
	canon := args
	if json.Unmarshal(args, &v) == nil {
		canon, _ = json.Marshal(v) // keys sorted
	}
	sum := sha256.Sum256(append([]byte(id+"\x00"), canon...))
	return hex.EncodeToString(sum[:8])
}

func (ec *execContext) failedBefore(id string, args json.RawMessage) (abi.Code, bool) {
	c, ok := ec.failed[argsHash(id, args)]
	return c, ok
}

func (ec *execContext) record(id string, args json.RawMessage, env abi.Envelope) {
	if ec.failed == nil {
		ec.failed, ec.patterns, ec.lastFailure = map[string]abi.Code{}, map[string]map[abi.Code]string{}, map[string]abi.Code{}
	}
	if env.Error != nil {
		if env.Error.Code != abi.CodeSkipped {
			ec.failed[argsHash(id, args)] = env.Error.Code
			ec.lastFailure[id] = env.Error.Code
		}
		return
	}
	if code, ok := ec.lastFailure[id]; ok {
		if ec.patterns[id] == nil {
			ec.patterns[id] = map[abi.Code]string{}
		}
		ec.patterns[id][code] = "succeeded with arguments " + snippet(string(args))
		delete(ec.lastFailure, id)
	}
}

func (ec *execContext) observe(text string) {
	ec.observations = append(ec.observations, text)
	if len(ec.observations) > 10 {
		ec.observations = ec.observations[len(ec.observations)-10:]
	}
}

// summary is the failure summary put into each prompt.
func (ec *execContext) summary() string {
	if len(ec.failed) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Failed calls so far: %d (identical calls will not be run again).", len(ec.failed))
	name := ec.name
	if name == nil {
		name = func(id string) string { return id }
	}
	for _, id := range sortedKeys(ec.lastFailure) {
		fmt.Fprintf(&b, " %s last failed with %s.", name(id), ec.lastFailure[id])
	}
	for _, id := range sortedKeys(ec.patterns) {
		for code, fix := range ec.patterns[id] {
			fmt.Fprintf(&b, " %s: after %s it %s.", name(id), code, fix)
		}
	}
	return b.String()
}

func wireNames(defs []llm.ToolDef) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return out
}

func snippet(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// uiHints is the post-processor of a tool's ui field: for a successful
// call, the kind and every hint that is not a JSON pointer or is one that
// resolves in the result.
func uiHints(t *manifest.Tool, env abi.Envelope) map[string]string {
	if t == nil || len(t.UI) == 0 || env.Error != nil {
		return nil
	}
	var result any
	if json.Unmarshal(env.Output, &result) != nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range t.UI {
		if k == "kind" || !strings.HasPrefix(v, "/") || resolves(result, v) {
			out[k] = v
		}
	}
	return out
}

// resolves reports whether the JSON pointer p names a value in v.
func resolves(v any, p string) bool {
	for _, tok := range strings.Split(p, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return false
			}
			v = x[i]
		default:
			return false
		}
	}
	return true
}
