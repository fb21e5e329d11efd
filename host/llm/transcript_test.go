package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/agenthost/agenthost/host/llm"
)

// transcriptConfig is a transcript's config section.
type transcriptConfig struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Key      bool   `json:"key"`
	Stream   bool   `json:"stream"`
	CRLF     bool   `json:"crlf"`
	Path     string `json:"path"`
	Query    string `json:"query"`
}

// turnWant is a want.N section: the Response expected, and the text
// deltas when the answer streams.
type turnWant struct {
	Content   string         `json:"content"`
	ToolCalls []llm.ToolCall `json:"tool_calls"`
	Deltas    []string       `json:"deltas"`
}

const transcriptKey = "sk-transcript-0123456789"

var statsDef = llm.ToolDef{Name: "text__stats", Description: "Counts the words of a text.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`)}

// TestTranscripts replays each recorded transcript (testdata/transcripts,
// one per provider and endpoint, streamed and not, in the shapes their
// documentation gives): the provider sends what the transcript's
// request.N holds (and what the provider's rules allow), reads
// response.N into want.N, and answers the tool call with its result.
func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/transcripts/*.txtar")
	if len(files) < 8 {
		t.Fatalf("found %d transcripts", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sec := map[string][]byte{}
			for _, f := range ar.Files {
				sec[f.Name] = f.Data
			}
			var cfg transcriptConfig
			if err := json.Unmarshal(sec["config"], &cfg); err != nil {
				t.Fatal(err)
			}
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := strconv.Itoa(int(n.Add(1)))
				body, _ := io.ReadAll(r.Body)
				if r.Method != http.MethodPost || r.URL.Path != cfg.Path || r.URL.RawQuery != cfg.Query {
					t.Errorf("request %s: %s %s?%s, want POST %s?%s", i, r.Method, r.URL.Path, r.URL.RawQuery, cfg.Path, cfg.Query)
				}
				if err := keyHeader(cfg, r.Header); err != nil {
					t.Errorf("request %s: %v", i, err)
				}
				if err := llm.CheckRequest(cfg.Provider, body); err != nil {
					t.Errorf("request %s breaks the provider's rules: %v", i, err)
				}
				var want, got any
				if err := json.Unmarshal(sec["request."+i], &want); err != nil {
					t.Errorf("request.%s: %v", i, err)
				}
				json.Unmarshal(body, &got)
				if err := subset(want, got, ""); err != nil {
					t.Errorf("request %s: %v\n%s", i, err, body)
				}
				resp := sec["response."+i]
				if cfg.CRLF {
					resp = []byte(strings.ReplaceAll(string(resp), "\n", "\r\n"))
				}
				if cfg.Stream {
					w.Header().Set("Content-Type", "text/event-stream")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				w.Write(resp)
			}))
			defer srv.Close()
			p := transcriptProvider(t, cfg, srv.URL)
			msgs := []llm.Message{{Role: llm.RoleSystem, Content: "Count words with the tools."}, {Role: llm.RoleUser, Content: "How many words are in 'one two three'?"}}
			for turn := 1; ; turn++ {
				wantRaw, ok := sec["want."+strconv.Itoa(turn)]
				if !ok {
					break
				}
				var want turnWant
				if err := json.Unmarshal(wantRaw, &want); err != nil {
					t.Fatal(err)
				}
				var deltas []string
				resp, err := p.Complete(context.Background(), llm.Request{Model: cfg.Model, Messages: msgs, Tools: []llm.ToolDef{statsDef},
					OnDelta: func(s string) { deltas = append(deltas, s) }})
				if err != nil {
					t.Fatalf("turn %d: %v", turn, err)
				}
				if resp.Content != want.Content || !reflect.DeepEqual(resp.ToolCalls, want.ToolCalls) {
					t.Fatalf("turn %d: got %+v, want %+v", turn, resp, want)
				}
				if cfg.Stream && !reflect.DeepEqual(deltas, want.Deltas) || !cfg.Stream && len(deltas) != 0 {
					t.Fatalf("turn %d: deltas %q, want %q", turn, deltas, want.Deltas)
				}
				if len(resp.ToolCalls) == 0 {
					break
				}
				msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
				for _, c := range resp.ToolCalls {
					msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Content: `{"words":3}`})
				}
			}
			if int(n.Load()) != strings.Count(string(txtar.Format(ar)), "-- response.") {
				t.Fatalf("%d requests for the transcript's responses", n.Load())
			}
		})
	}
}

// keyHeader checks the key is sent where the provider expects it.
func keyHeader(cfg transcriptConfig, h http.Header) error {
	var name, want string
	switch cfg.Provider {
	case "openai":
		name, want = "Authorization", "Bearer "+transcriptKey
		if !cfg.Key {
			want = ""
		}
	case "anthropic":
		if h.Get("anthropic-version") == "" {
			return fmt.Errorf("no anthropic-version header")
		}
		name, want = "x-api-key", transcriptKey
	case "gemini":
		name, want = "x-goog-api-key", transcriptKey
	}
	if got := h.Get(name); got != want {
		return fmt.Errorf("%s: %q, want %q", name, got, want)
	}
	return nil
}

func transcriptProvider(t *testing.T, cfg transcriptConfig, base string) llm.Provider {
	t.Helper()
	t.Setenv("AGENTHOST_TRANSCRIPT_KEY", transcriptKey)
	var p llm.Provider
	var err error
	switch cfg.Provider {
	case "openai":
		env := ""
		if cfg.Key {
			env = "AGENTHOST_TRANSCRIPT_KEY"
		}
		p, err = llm.NewOpenAI(llm.OpenAIConfig{BaseURL: base + "/v1", APIKeyEnv: env, Stream: cfg.Stream, MaxRetries: -1})
	case "anthropic":
		p, err = llm.NewAnthropic(llm.AnthropicConfig{BaseURL: base, APIKeyEnv: "AGENTHOST_TRANSCRIPT_KEY", Stream: cfg.Stream, MaxRetries: -1})
	case "gemini":
		p, err = llm.NewGemini(llm.GeminiConfig{BaseURL: base + "/v1beta", APIKeyEnv: "AGENTHOST_TRANSCRIPT_KEY", Stream: cfg.Stream, MaxRetries: -1})
	default:
		t.Fatalf("provider %q", cfg.Provider)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// subset reports where got lacks what want holds: objects by key (got
// may have more), arrays element by element (same length), the rest by
// equality.
func subset(want, got any, at string) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %v", at, got)
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s.%s: missing", at, k)
			}
			if err := subset(v, gv, at+"."+k); err != nil {
				return err
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: want %d elements, got %v", at, len(w), got)
		}
		for i := range w {
			if err := subset(w[i], g[i], fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	default:
		if !reflect.DeepEqual(want, got) {
			return fmt.Errorf("%s: %v, want %v", at, got, want)
		}
	}
	return nil
}
