package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
)

// Code mode over MCP (Options.CodeMode): two more tools, run_code (a
// program that calls the catalogue's tools as functions, through
// code:js or code:starlark; its description carries the typed API, or
// points at search_tools when the catalogue is long) and search_tools
// (the typed API's search). Their names hold no "__", so no catalogue
// tool's wire name can take them; they are not on the fast paths and
// not task-augmentable (the SDK's dispatch answers them).

// codeTools is the state of code mode's tools.
type codeTools struct {
	on   bool
	desc string // run_code's description as listed now
}

// searchToolsSchema is search_tools' input schema.
var searchToolsSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"Words to look for in the tools' names and descriptions (empty: every tool)."},` +
	`"language":{"type":"string","enum":["ts","starlark"],"description":"The declarations' language (default ts)."},` +
	`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"At most this many tools (default 10)."}},` +
	`"additionalProperties":false}`)

// maxSearchLimit bounds search_tools' limit.
const maxSearchLimit = 50

// syncCode lists run_code and search_tools, again when the API their
// description carries changed. The caller holds s.mu.
func (s *Server) syncCode() {
	if !s.code.on {
		return
	}
	api, err := s.h.CodeAPIText(host.CodeAPIOptions{SearchTool: host.SearchToolsName})
	if err != nil {
		s.log.Warn("MCP run_code left out", "error", err)
		return
	}
	desc := "Runs a program (JavaScript by default, or Starlark) in which the tools of this server are functions, and returns {result, log, calls}: " +
		"do a task that needs many tool calls in one run and return only the answer. " + api
	if desc == s.code.desc {
		return
	}
	s.code.desc = desc
	s.srv.AddTool(&sdk.Tool{Name: host.RunCodeName, Title: "Run a program that calls tools", Description: desc, InputSchema: host.RunCodeSchema(),
		Annotations: &sdk.ToolAnnotations{Title: "Run a program that calls tools"}}, s.runCode)
	s.srv.AddTool(&sdk.Tool{Name: host.SearchToolsName, Title: "Search the tools a program may call",
		Description: "Searches the tools a run_code program may call by words of their names and descriptions, and returns {tools: [{id, description, declaration}]}: each tool's function as a TypeScript declaration (or a Starlark stub).",
		InputSchema: searchToolsSchema, Annotations: &sdk.ToolAnnotations{Title: "Search the tools a program may call", ReadOnlyHint: true}}, s.searchTools)
}

// runCode answers a run_code call; with a progress token, each inner
// call of the program is a progress notification naming it.
func (s *Server) runCode(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	token := req.Params.GetProgressToken()
	var n atomic.Int64
	scope := host.CodeScope{Step: func(st host.CodeStep) {
		k := n.Add(1)
		if token != nil && req.Session != nil {
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(k),
				Message: fmt.Sprintf("%s: %s", st.Envelope.ToolID, st.Envelope.Status)})
		}
	}}
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	return resultOf(host.RunCodeName, s.h.RunCode(ctx, args, scope)), nil
}

// searchTools answers a search_tools call.
func (s *Server) searchTools(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var in struct {
		Query    string `json:"query"`
		Language string `json:"language"`
		Limit    int    `json:"limit"`
	}
	fail := func(e *abi.Error) (*sdk.CallToolResult, error) {
		return resultOf(host.SearchToolsName, abi.Failure(host.SearchToolsName, e)), nil
	}
	if len(req.Params.Arguments) > 0 {
		dec := json.NewDecoder(bytes.NewReader(req.Params.Arguments))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return fail(abi.Errorf(abi.CodeInvalidArguments, "search_tools takes {query, language?, limit?}: %s", err.Error()))
		}
	}
	if in.Language == "" {
		in.Language = host.CodeAPITypeScript
	}
	if in.Limit == 0 {
		in.Limit = 10
	}
	if in.Limit < 1 || in.Limit > maxSearchLimit {
		return fail(abi.Errorf(abi.CodeInvalidArguments, "limit %d: want 1 to %d", in.Limit, maxSearchLimit))
	}
	found, err := s.h.SearchTools(in.Query, in.Language, nil, in.Limit)
	if err != nil {
		return fail(abi.Errorf(abi.CodeInvalidArguments, "%s", err.Error()))
	}
	if found == nil {
		found = []host.ToolDecl{}
	}
	out, _ := json.Marshal(map[string]any{"tools": found})
	return resultOf(host.SearchToolsName, abi.Envelope{ToolID: host.SearchToolsName, Status: abi.StatusSuccess, Output: out}), nil
}
