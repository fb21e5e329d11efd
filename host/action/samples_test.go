package action_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/action"
)

// TestLLMSamples pins the table of testdata/llm/README.md: the shared raw
// outputs that the CLI demo and end-to-end tests feed to the host. Samples
// added without a row here are not checked.
func TestLLMSamples(t *testing.T) {
	want := map[string]struct {
		tools []string
		err   string
	}{
		"demo.txt":                 {tools: []string{"fs:list", "data:csv-to-json", "json:query", "fs:write"}},
		"echo_simple.txt":          {tools: []string{"core:echo"}},
		"two_calls_stats_hash.txt": {tools: []string{"text:stats", "hash:digest"}},
		"fenced_xml.txt":           {tools: []string{"fs:read"}},
		"missing_end_tag.txt":      {tools: []string{"fs:write"}},
		"regex_bare_lt_amp.txt":    {tools: []string{"text:regex"}},
		"jq_cdata.txt":             {tools: []string{"json:query"}},
		"semver_items.txt":         {tools: []string{"node:semver-compare"}},
		"form_b.txt":               {tools: []string{"data:csv-to-json"}},
		"plain_answer.txt":         {tools: []string{}},
		"malformed_generic.txt":    {err: "<![CDATA["},
		"misspelt_param.txt":       {tools: []string{"text:stats"}},
		"unknown_tool.txt":         {tools: []string{"text:stat"}},
		"truncated_start_tag.txt":  {err: "cut-off <ACTION start tag"},
	}
	dir := filepath.Join("..", "..", "testdata", "llm")
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			r, err := action.Parse(string(data), action.Options{})
			if w.err != "" {
				if err == nil || !strings.Contains(err.Error(), w.err) {
					t.Fatalf("err = %v, want %q", err, w.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range r.Calls {
				got = append(got, c.Tool)
			}
			if !slices.Equal(got, w.tools) && !(len(got) == 0 && len(w.tools) == 0) {
				t.Errorf("tools = %q, want %q", got, w.tools)
			}
		})
	}
}
