package mcp

import (
	"io"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTaskLines pins stdio's rename of task-augmented calls, line by
// line: other lines pass as they are, a call longer than the reader's
// buffer is still renamed, a last line without a newline and CRLF line
// ends are kept, and a line longer than the SDK takes is passed on
// unread.
func TestTaskLines(t *testing.T) {
	task := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"core__echo","arguments":{"x":"` + strings.Repeat("a", 200<<10) + `"},"task":{}}}`
	huge := strings.Repeat(" ", sdk.DefaultMaxLineLength+10) + task
	tests := []struct {
		name, in string
		renamed  int
	}{
		{"plain call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"task":{}}}}` + "\n", 0},
		{"task", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":{"ttl":5}}}` + "\n", 1},
		{"long task", task + "\n", 1},
		{"crlf and no last newline", task + "\r\n" + task, 2},
		{"not JSON", `{"task": ` + "\n", 0},
		{"batch", "[" + task + "]\n", 0},
		{"longer than the SDK takes", huge + "\n", 0},
	}
	for _, tc := range tests {
		out, err := io.ReadAll(newTaskLines(io.NopCloser(strings.NewReader(tc.in))))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if n := strings.Count(string(out), callAsTask); n != tc.renamed {
			t.Errorf("%s: %d renamed, want %d", tc.name, n, tc.renamed)
		}
		if tc.renamed == 0 && string(out) != tc.in {
			t.Errorf("%s: changed", tc.name)
		}
		if strings.Count(string(out), "\n") != strings.Count(tc.in, "\n") || strings.Count(string(out), "\r") != strings.Count(tc.in, "\r") {
			t.Errorf("%s: line ends changed", tc.name)
		}
	}
}
