package prompt_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/action"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/prompt"
)

func tools() []*manifest.Tool {
	return []*manifest.Tool{
		{
			ToolID: "text:stats", DisplayName: "Text statistics", Version: "1.0.0",
			Description: "Counts characters, words and lines of a text. Use it before summarising long input.",
			Handler:     manifest.Handler{Type: "wasm", Module: "stats.wasm", ABI: "wasi-command"},
			Parameters: json.RawMessage(`{"type":"object","required":["text"],"properties":{
				"text":{"type":"string","description":"The text to measure."},
				"top":{"type":"integer","default":5,"description":"How many frequent words to list."},
				"mode":{"type":"string","enum":["words","lines"]},
				"ignore":{"type":"array","items":{"type":"string"}}}}`),
			Examples: []manifest.Example{{Description: "Count a sentence.", Input: json.RawMessage(`{"text":"a < b & c","top":3,"ignore":["a"]}`)}},
		},
		{
			ToolID: "core:echo", DisplayName: "Echo", Version: "1.0.0",
			Description: "Returns its arguments unchanged.",
			Handler:     manifest.Handler{Type: "wasm", Module: "echo.wasm", ABI: "wasi-command"},
		},
	}
}

func TestRender_golden(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts prompt.Options
	}{{"full", prompt.Options{}}, {"compact", prompt.Options{Compact: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			got := prompt.Render(tools(), tc.opts)
			hosttest.Golden(t, filepath.Join("testdata", tc.name+".golden"), []byte(got))
		})
	}
}

// TestRender_examplesParse checks that every example call the prompt shows
// is itself a valid ACTION block calling the right tool with its inputs.
func TestRender_examplesParse(t *testing.T) {
	out := prompt.Render(tools(), prompt.Options{})
	i := strings.Index(out, "<ACTION>")
	j := strings.Index(out, "</ACTION>")
	if i < 0 || j < i {
		t.Fatalf("no example block in:\n%s", out)
	}
	res, err := action.Parse(out[i:j+len("</ACTION>")], action.Options{})
	if err != nil {
		t.Fatalf("example does not parse: %v", err)
	}
	if len(res.Calls) != 1 || res.Calls[0].Tool != "text:stats" {
		t.Fatalf("calls %+v", res.Calls)
	}
	args := res.Calls[0].Args
	if args["text"] != "a < b & c" || args["top"] != "3" {
		t.Errorf("args %#v", args)
	}
}

func TestRender_compactIsShorter(t *testing.T) {
	full, compact := prompt.Render(tools(), prompt.Options{}), prompt.Render(tools(), prompt.Options{Compact: true})
	if len(compact)*2 > len(full) {
		t.Errorf("compact prompt is %d bytes, full %d: expected under half", len(compact), len(full))
	}
	if !strings.Contains(compact, "text:stats(text: string, ignore?: list of string, mode?: \"words\"|\"lines\", top?: integer)") {
		t.Errorf("compact signature missing:\n%s", compact)
	}
}
