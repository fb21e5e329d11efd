package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzEdge feeds any message to what the server parses before the SDK
// does: the rename of task-augmented calls (per body and per stdio line)
// and the fast path's request checks. Neither panics; the rename changes
// nothing but a tools/call holding a task object, which it makes a
// callAsTask request with the same ID and params; the line reader keeps
// every other line byte for byte; the fast path takes only a plain call
// with an integer or string ID. Seeds: the table cases of the tests and
// testdata/fuzz/FuzzEdge.
func FuzzEdge(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":{"ttl":5}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a","arguments":{"task":{}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":null}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"a","arguments":{}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"task":{}}}]`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"task": `, "", "\n\n", "{}\r\n{}",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		b := []byte(msg)
		out := taskCallBody(b)
		if !bytes.Equal(out, b) {
			m, err := jsonrpc.DecodeMessage(out)
			req, ok := m.(*jsonrpc.Request)
			if err != nil || !ok || req.Method != callAsTask {
				t.Fatalf("renamed into %q", out)
			}
			orig, _ := jsonrpc.DecodeMessage(b)
			if o := orig.(*jsonrpc.Request); o.ID != req.ID || !bytes.Equal(o.Params, req.Params) {
				t.Fatalf("the rename changed more than the method: %q", out)
			}
		}
		lines, err := io.ReadAll(newTaskLines(io.NopCloser(strings.NewReader(msg))))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(msg, `"task"`) && string(lines) != msg {
			t.Fatalf("a stream without a task changed: %q", lines)
		}
		var n struct {
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(b, &n) == nil {
			(&fast{running: map[fastKey]context.CancelFunc{}}).cancel("s", n.Params)
		}
		// The stdio fast path's look at a line, and its output's watch
		// for the answer to initialize, before a session is ready.
		srv := &Server{}
		srv.fast.running = map[fastKey]context.CancelFunc{}
		if _, ok := srv.plain(b); ok {
			t.Fatalf("a call of a tool the server does not list: %q", b)
		}
		var sink bytes.Buffer
		lw := &lineWriter{w: nopCloser{&sink}}
		sf := srv.newStdioFast(lw)
		defer sf.close()
		if sf.take(b) {
			t.Fatalf("a line was answered before initialize: %q", b)
		}
		lw.expect("n:1")
		if _, err := lw.Write(b); err != nil || sink.String() != msg {
			t.Fatalf("the output changed: %q", sink.String())
		}
	})
}
