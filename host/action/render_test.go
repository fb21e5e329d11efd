package action_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/action"
)

func TestRender_roundTrip(t *testing.T) {
	tests := []struct {
		name  string
		calls []action.Call
		want  string // a substring of the rendered block
	}{
		{name: "plain strings", calls: []action.Call{{Tool: "core:echo", Args: map[string]any{"text": "hello", "empty": ""}}}, want: "<text>hello</text>"},
		{name: "special characters use CDATA", calls: []action.Call{{Tool: "code:run", Args: map[string]any{"code": "if a < b && c > d {}"}}}, want: "<![CDATA[if a < b && c > d {}]]>"},
		{name: "CDATA terminator split", calls: []action.Call{{Tool: "core:x", Args: map[string]any{"v": "a]]>b]]>"}}}, want: "]]]]><![CDATA[>"},
		{name: "leading and trailing whitespace kept", calls: []action.Call{{Tool: "core:x", Args: map[string]any{"v": "  padded\n"}}}, want: "<![CDATA[  padded\n]]>"},
		{name: "whitespace only", calls: []action.Call{{Tool: "core:x", Args: map[string]any{"v": " \t "}}}},
		{name: "CR as reference", calls: []action.Call{{Tool: "core:x", Args: map[string]any{"v": "a\r\nb\r"}}}, want: "&#13;"},
		{name: "lists and objects", calls: []action.Call{{Tool: "data:insert", Args: map[string]any{
			"rows":   []any{map[string]any{"name": "Alice", "tags": []any{"a"}}, map[string]any{"n": "1"}},
			"matrix": []any{[]any{"1", "2"}, []any{"3"}},
			"one":    []any{"x"},
		}}}, want: "<item>x</item>"},
		{name: "object of strings as attributes", calls: []action.Call{{Tool: "core:x", Args: map[string]any{"range": map[string]any{"start": "1", "end": "a\"<&\n\t"}}}}, want: `<range end="a&quot;&lt;&amp;&#10;&#9;" start="1"/>`},
		{name: "object with only an item key", calls: []action.Call{{Tool: "core:x", Args: map[string]any{"p": map[string]any{"item": "x"}}}}, want: `<p item="x"/>`},
		{name: "object with xmlns key uses elements", calls: []action.Call{{Tool: "core:x", Args: map[string]any{"p": map[string]any{"xmlns": "u", "a": "b"}}}}, want: "<xmlns>u</xmlns>"},
		{name: "two calls no args", calls: []action.Call{{Tool: "core:now", Args: map[string]any{}}, {Tool: "fs.read-file", Args: map[string]any{"path": "a"}}}, want: "<core:now/>"},
		{name: "Chinese", calls: []action.Call{{Tool: "工具:搜索", Args: map[string]any{"查询": "北京\u3000"}}}, want: "<查询>北京\u3000</查询>"},
		{name: "tool ID that is no XML name uses form B", calls: []action.Call{{Tool: "2fa:verify", Args: map[string]any{"code": "1"}}, {Tool: "core:now", Args: map[string]any{}}}, want: "<tool_id>2fa:verify</tool_id>"},
		{name: "argument name that is no XML name uses form B", calls: []action.Call{{Tool: "core:x", Args: map[string]any{"user id": "bob", "name": map[string]any{"name": "n", "x": "y"}}}}, want: `<input name="user id">bob</input>`},
		{name: "tool named tool_id uses form B", calls: []action.Call{{Tool: "tool_id", Args: map[string]any{}}}, want: "<tool_id>tool_id</tool_id>"},
		{name: "argument named action uses form B", calls: []action.Call{{Tool: "core:x", Args: map[string]any{"Action": "go"}}}, want: `<input name="Action">go</input>`},
		{name: "form B input object of strings", calls: []action.Call{{Tool: "a b", Args: map[string]any{"p": map[string]any{"k": "v"}}}}, want: `<input name="p" k="v"/>`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := action.Render(tc.calls)
			if !strings.Contains(out, tc.want) {
				t.Errorf("Render = \n%s\nwant it to contain %q", out, tc.want)
			}
			r, err := action.Parse(out, action.Options{})
			if err != nil {
				t.Fatalf("Parse(Render) = %v\n%s", err, out)
			}
			a, _ := json.Marshal(tc.calls)
			b, _ := json.Marshal(r.Calls)
			if string(a) != string(b) {
				t.Errorf("round trip\nrendered:\n%s\nbefore %s\nafter  %s", out, a, b)
			}
		})
	}
}

func TestRender_lossy(t *testing.T) {
	tests := []struct {
		name string
		args map[string]any
		want map[string]any
	}{
		{name: "scalars as JSON text", args: map[string]any{"n": 3.5, "b": true, "z": nil}, want: map[string]any{"n": "3.5", "b": "true", "z": ""}},
		{name: "empty list and object", args: map[string]any{"l": []any{}, "o": map[string]any{}}, want: map[string]any{"l": "", "o": ""}},
		{name: "nested invalid key", args: map[string]any{"o": map[string]any{"a b": []any{"1"}, "action": []any{"2"}}}, want: map[string]any{"o": map[string]any{"a_b": []any{"1"}, "_action": []any{"2"}}}},
		{name: "control character", args: map[string]any{"v": "a\x01b"}, want: map[string]any{"v": "a\uFFFDb"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := action.Render([]action.Call{{Tool: "core:x", Args: tc.args}})
			r, err := action.Parse(out, action.Options{})
			if err != nil {
				t.Fatalf("Parse(Render) = %v\n%s", err, out)
			}
			a, _ := json.Marshal(tc.want)
			b, _ := json.Marshal(r.Calls[0].Args)
			if string(a) != string(b) {
				t.Errorf("got %s, want %s\n%s", b, a, out)
			}
		})
	}
}

func TestRender_canonical(t *testing.T) {
	got := action.Render([]action.Call{{Tool: "core:read-state", Args: map[string]any{
		"path":  "environment.weather",
		"names": []any{"Alice", "Bob"},
		"code":  "if a < b && c > d { }",
	}}})
	want := `<ACTION>
  <core:read-state>
    <code><![CDATA[if a < b && c > d { }]]></code>
    <names>
      <item>Alice</item>
      <item>Bob</item>
    </names>
    <path>environment.weather</path>
  </core:read-state>
</ACTION>`
	if got != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
}
