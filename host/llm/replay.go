package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
)

// Replay plays back a JSONL file of model turns, one per line:
//
//	{"content": "…", "tool_calls": [{"id": "c1", "name": "core__echo", "arguments": {"a": 1}}]}
//
// "arguments" may be a JSON object or the JSON text of one, as providers
// send it. Each Complete returns the next turn; past the last one it is an
// error. It makes tests and demos run without a model. Like the real
// providers, it refuses a request that one of them would refuse (see
// CheckTools): a regression in the definitions or the conversation fails
// here rather than against a live API.
type Replay struct {
	mu    sync.Mutex
	turns []Response
	next  int
	// Requests records what each Complete was asked (for tests).
	Requests []Request
}

// NewReplay reads the turns of a JSONL file.
func NewReplay(path string) (*Replay, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return ParseReplay(b)
}

// ParseReplay reads turns from JSONL bytes; blank lines are skipped.
func ParseReplay(b []byte) (*Replay, error) {
	r := &Replay{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var t struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"tool_calls"`
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			return nil, fmt.Errorf("replay line %d: %w", n, err)
		}
		resp := Response{Content: t.Content}
		for i, c := range t.ToolCalls {
			args := string(c.Arguments)
			var s string
			if json.Unmarshal(c.Arguments, &s) == nil {
				args = s // the JSON text form
			}
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", n, i+1)
			}
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: id, Name: c.Name, Arguments: args})
		}
		r.turns = append(r.turns, resp)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return r, nil
}

// Complete returns the next scripted turn.
func (r *Replay) Complete(_ context.Context, req Request) (Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Requests = append(r.Requests, req)
	if err := CheckTools(req); err != nil {
		return Response{}, fmt.Errorf("replay: the providers would refuse this request: %w", err)
	}
	if r.next >= len(r.turns) {
		return Response{}, fmt.Errorf("replay: the transcript has no turn %d (it holds %d)", r.next+1, len(r.turns))
	}
	t := r.turns[r.next]
	r.next++
	return t, nil
}

var _ Provider = (*Replay)(nil)
