package mcp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/mcp"
)

// BenchmarkApproval is a 2026-07-28 tools/call of core:echo over
// Streamable HTTP on loopback: plain (no approve rule; the fast path),
// plain-rules (a rule naming another tool: still the fast path, plus the
// check), and approved (a rule naming core:echo: the input_required round
// and the retry carrying the answer, through the SDK's dispatch).
func BenchmarkApproval(b *testing.B) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}`
	const call = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"core__echo","arguments":{"a":1},%s` + meta + `}}`
	for _, tc := range []struct{ name, policy string }{
		{"plain", ""},
		{"plain-rules", "approve:\n  - tools: [\"text:stats\"]\n"},
		{"approved", "approve:\n  - tools: [\"core:echo\"]\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := hosttest.NewHost(b, nil, hosttest.Toolpacks(b))
			if tc.policy != "" {
				h = hosttest.NewHost(b, hosttest.Policy(b, tc.policy), hosttest.Toolpacks(b))
			}
			srv := mcp.New(h, mcp.Options{})
			ts := httptest.NewServer(srv.Handler())
			defer func() {
				ts.Close()
				srv.Close()
			}()
			c := &statelessHTTP{url: ts.URL, c: &http.Client{}}
			for i := 0; b.Loop(); i++ {
				_, body := c.post(b, fmt.Sprintf(call, 2*i+2, ""), tc.name != "approved")
				if tc.name != "approved" {
					continue
				}
				state := requestStateOf(b, body)
				answer := `"inputResponses":{"approval":{"action":"accept","content":{"decision":"allow-once"}}},"requestState":"` + state + `",`
				if _, body = c.post(b, fmt.Sprintf(call, 2*i+3, answer), true); !strings.Contains(body, `"structuredContent":{"a":1}`) {
					b.Fatalf("the retry: %s", body)
				}
			}
		})
	}
}

// requestStateOf reads requestState from an input_required answer (one
// JSON object, or one server-sent event holding it).
func requestStateOf(tb testing.TB, body string) string {
	tb.Helper()
	if i := strings.Index(body, "data: "); i >= 0 {
		body = body[i+len("data: "):]
	}
	var m struct {
		Result struct {
			ResultType   string `json:"resultType"`
			RequestState string `json:"requestState"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(body)), &m); err != nil || m.Result.ResultType != "input_required" || m.Result.RequestState == "" {
		tb.Fatalf("not input_required (%v): %s", err, body)
	}
	return m.Result.RequestState
}
