package action_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/action"
)

// wrap puts params into one form A call inside a block.
func wrap(params string) string {
	return "<ACTION><core:x>" + params + "</core:x></ACTION>"
}

func nest(depth int, leaf string) string {
	// depth counts the tool element as level 1.
	var b strings.Builder
	b.WriteString("<ACTION><core:x>")
	for i := 2; i <= depth; i++ {
		b.WriteString("<n>")
	}
	b.WriteString(leaf)
	for i := 2; i <= depth; i++ {
		b.WriteString("</n>")
	}
	b.WriteString("</core:x></ACTION>")
	return b.String()
}

func TestParse_limits(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 256*1024/16) // 256 KiB
	bigCode := strings.Repeat("if a < b && c > d {}\n", 256*1024/21)
	calls := func(n int) string {
		return "<ACTION>" + strings.Repeat("<core:now/>", n) + "</ACTION>"
	}
	tests := []struct {
		name    string
		in      string
		opts    action.Options
		wantErr string
		check   func(t *testing.T, r *action.Result)
	}{
		{name: "256KiB text value intact", in: wrap("<v>" + big + "</v>"), check: func(t *testing.T, r *action.Result) {
			if r.Calls[0].Args["v"] != big {
				t.Error("256 KiB value changed")
			}
		}},
		{name: "256KiB CDATA value intact", in: wrap("<v><![CDATA[" + bigCode + "]]></v>"), check: func(t *testing.T, r *action.Result) {
			if r.Calls[0].Args["v"] != bigCode {
				t.Error("256 KiB CDATA value changed")
			}
		}},
		{name: "block just under 1MiB passes", in: wrap("<v>" + strings.Repeat("x", action.DefaultMaxBytes-len(wrap("<v></v>"))) + "</v>")},
		{name: "block over 1MiB rejected", in: wrap("<v>" + strings.Repeat("x", action.DefaultMaxBytes) + "</v>"), wantErr: "larger than the limit of 1048576 bytes"},
		{name: "block over 1MiB without end tag rejected", in: "<ACTION><core:x><v>" + strings.Repeat("x", action.DefaultMaxBytes), wantErr: "larger than the limit"},
		{name: "prose over 1MiB before a small block is fine", in: strings.Repeat("words ", 300000) + wrap("<v>1</v>")},
		{name: "depth 64", in: nest(64, "deep")},
		{name: "depth 1000", in: nest(1000, "deep")},
		{name: "depth 1001", in: nest(1001, "deep"), wantErr: "deeper than the limit of 1000"},
		{name: "MaxDepth 64 allows 64", in: nest(64, "x"), opts: action.Options{MaxDepth: 64}},
		{name: "MaxDepth 64 rejects 65", in: nest(65, "x"), opts: action.Options{MaxDepth: 64}, wantErr: "deeper than the limit of 64"},
		{name: "16 calls", in: calls(16), check: func(t *testing.T, r *action.Result) {
			if len(r.Calls) != 16 {
				t.Errorf("got %d calls", len(r.Calls))
			}
		}},
		{name: "17 calls", in: calls(17), wantErr: "at most 16"},
		{name: "negative options mean defaults", in: calls(16), opts: action.Options{MaxCalls: -1, MaxBytes: -1, MaxDepth: -1}},
		{name: "MaxCalls 100", in: calls(17), opts: action.Options{MaxCalls: 100}},
		{name: "MaxBytes counts the whole block", in: wrap("<v>12345</v>"), opts: action.Options{MaxBytes: len(wrap("<v>12345</v>"))}},
		{name: "MaxBytes one short", in: wrap("<v>12345</v>"), opts: action.Options{MaxBytes: len(wrap("<v>12345</v>")) - 1}, wantErr: "larger than the limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := action.Parse(tc.in, tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestParse_errorShape(t *testing.T) {
	in := "I'll fix it.\n<ACTION>\n  <code:write><code>List<String> x;</code></code:write>\n</ACTION>"
	r, err := action.Parse(in, action.Options{})
	if !errors.Is(err, abi.ErrMalformedAction) {
		t.Fatalf("err = %v, want MALFORMED_ACTION", err)
	}
	var ae *abi.Error
	if !errors.As(err, &ae) {
		t.Fatalf("err is %T", err)
	}
	d, ok := ae.Details.(map[string]any)
	if !ok {
		t.Fatalf("details = %#v", ae.Details)
	}
	if d["line"] != 3 || d["column"] != 36 {
		t.Errorf("position = %v:%v, want 3:36", d["line"], d["column"])
	}
	if h, _ := d["hint"].(string); !strings.Contains(h, "<![CDATA[") {
		t.Errorf("hint %q does not mention CDATA", h)
	}
	if !strings.Contains(ae.Message, "<String>") || !strings.Contains(ae.Message, "line 3, column 36") {
		t.Errorf("message %q does not name the element and position", ae.Message)
	}
	if r == nil || r.ResponseText != "I'll fix it." || !r.Found || r.Calls != nil {
		t.Errorf("result on error = %+v", r)
	}
}

func TestParse_found(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		found     bool
		err       bool
		wantCalls int
	}{
		{name: "plain text", in: "just an answer"},
		{name: "block", in: wrap("<v>1</v>"), found: true, wantCalls: 1},
		{name: "malformed block", in: wrap("<v>1"), found: true, err: true},
		{name: "cut-off tag", in: "x <ACT", found: true, err: true},
		{name: "stray end", in: "x </action>", found: true, err: true},
		{name: "tag in code span", in: "use `<ACTION>`"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := action.Parse(tc.in, action.Options{})
			if (err != nil) != tc.err {
				t.Fatalf("err = %v", err)
			}
			if r.Found != tc.found || len(r.Calls) != tc.wantCalls {
				t.Errorf("Found = %v, calls = %d; want %v, %d", r.Found, len(r.Calls), tc.found, tc.wantCalls)
			}
			if !tc.found && r.Calls == nil {
				t.Error("Calls is nil for a text reply; want an empty slice so JSON shows []")
			}
		})
	}
}

func TestParse_characters(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{name: "invalid UTF-8 in value", in: wrap("<v>a\xffb</v>"), wantErr: "invalid UTF-8"},
		{name: "invalid UTF-8 in CDATA", in: wrap("<v><![CDATA[\xc3]]></v>"), wantErr: "invalid UTF-8"},
		{name: "invalid UTF-8 in attribute", in: "<ACTION><core:x v=\"\xfe\"/></ACTION>", wantErr: "invalid UTF-8"},
		{name: "invalid UTF-8 in prose is raw text", in: "caf\xe9 " + wrap("<v>ok</v>"), want: "ok"},
		{name: "U+FFFE raw", in: wrap("<v>\uFFFE</v>"), wantErr: "U+FFFE"},
		{name: "NUL raw", in: wrap("<v>\x00</v>"), wantErr: "U+0000"},
		{name: "NUL in comment", in: "<ACTION><!-- \x00 --><core:x><v>1</v></core:x></ACTION>", wantErr: "U+0000"},
		{name: "tab kept", in: wrap("<v>a\tb</v>"), want: "a\tb"},
		{name: "char ref CR kept", in: wrap("<v>a&#13;b</v>"), want: "a\rb"},
		{name: "char ref spaces not trimmed", in: wrap("<v> &#32;x&#x20; </v>"), want: " x "},
		{name: "emoji", in: wrap("<v>🙂 &#x1F642;</v>"), want: "🙂 🙂"},
		{name: "astral name", in: "<ACTION><core:x><𐌰>v</𐌰></core:x></ACTION>"},
		// Leaves are shared with the output when verbatim and copied
		// otherwise; every way of breaking the verbatim stretch:
		{name: "verbatim with inner space", in: wrap("<v>\n  a b  \n</v>"), want: "a b"},
		{name: "entity in the middle", in: wrap("<v> a&amp;b </v>"), want: "a&b"},
		{name: "entity at the end", in: wrap("<v>ab&lt;</v>"), want: "ab<"},
		{name: "bare ampersand stays verbatim", in: wrap("<v>a & b</v>"), want: "a & b"},
		{name: "unknown entity stays verbatim", in: wrap("<v>a&nbsp;b</v>"), want: "a&nbsp;b"},
		{name: "bare lt stays verbatim", in: wrap("<v>a < b</v>"), want: "a < b"},
		{name: "CR in the middle", in: wrap("<v>a\r\nb</v>"), want: "a\nb"},
		{name: "CR trailing", in: wrap("<v>ab\r\n</v>"), want: "ab"},
		{name: "comment in the middle", in: wrap("<v>a<!-- c -->b</v>"), want: "ab"},
		{name: "two CDATA sections", in: wrap("<v><![CDATA[a]]><![CDATA[b]]></v>"), want: "ab"},
		{name: "CDATA with whitespace around", in: wrap("<v>\n  <![CDATA[ x ]]>\n</v>"), want: " x "},
		{name: "text then CDATA", in: wrap("<v>a <![CDATA[<b>]]> c</v>"), want: "a <b> c"},
		{name: "CDATA with CR", in: wrap("<v><![CDATA[a\r\nb]]></v>"), want: "a\nb"},
		{name: "comment after text, whitespace only after", in: wrap("<v>ab<!-- c -->  </v>"), want: "ab"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := action.Parse(tc.in, action.Options{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && r.Calls[0].Args["v"] != tc.want {
				t.Errorf("v = %q, want %q", r.Calls[0].Args["v"], tc.want)
			}
		})
	}
}

// TestParse_hostileInputsFinish feeds inputs built to make a naive scanner
// quadratic or recursive; they must simply finish (benchmarks measure speed).
func TestParse_hostileInputsFinish(t *testing.T) {
	n := 200_000
	var ticks strings.Builder
	for i := 1; ticks.Len() < n; i++ {
		ticks.WriteString(strings.Repeat("`", i%40+1) + " x ")
	}
	var attrs, dupKids strings.Builder
	for i := range 20000 {
		attrs.WriteString(" a" + itoa(i) + `=""`)
		dupKids.WriteString("<b" + itoa(i) + "/><b" + itoa(i) + "/>")
	}
	mixed := strings.Repeat("<m>x\r\n", 999) + strings.Repeat("</m>", 999)
	inputs := map[string]string{
		"backtick runs":         ticks.String(),
		"unclosed think":        strings.Repeat("<think>a ", n/9),
		"unclosed fences":       strings.Repeat("```\n", n/4),
		"many ACTION starts":    strings.Repeat("<ACTION <", n/9),
		"stray lt":              strings.Repeat("<", n),
		"many attributes":       "<ACTION><core:x" + attrs.String() + "/></ACTION>",
		"attr and dup children": "<ACTION><core:x><p" + attrs.String() + ">" + dupKids.String() + "</p></core:x></ACTION>",
		"nested mixed with CR":  "<ACTION><core:x>" + mixed + "</core:x></ACTION>",
		"amp runs":              wrap("<v>" + strings.Repeat("&#1111111111", n/12) + "</v>"),
		"comment dashes":        wrap("<v><!--" + strings.Repeat("-x", n/2) + "--></v>"),
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			r, _ := action.Parse(in, action.Options{})
			if r == nil {
				t.Fatal("nil result")
			}
		})
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestParse_ignoredNotes(t *testing.T) {
	in := "<ACTION>\nnarration\n<core:x><p kind=\"k\">v</p><h>a <b c=\"d\">x</b></h></core:x>\n</ACTION>\ntrailing"
	r, err := action.Parse(in, action.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"text directly under <ACTION> ignored", "attributes of <p> ignored", "text after </ACTION> ignored"}
	if len(r.Ignored) != len(want) {
		t.Fatalf("Ignored = %q", r.Ignored)
	}
	for i, w := range want {
		if !strings.Contains(r.Ignored[i], w) {
			t.Errorf("Ignored[%d] = %q, want %q", i, r.Ignored[i], w)
		}
	}
	var many strings.Builder
	many.WriteString("<ACTION>")
	for range 50 {
		many.WriteString("chatter <core:now/>")
	}
	many.WriteString("</ACTION>")
	r, err = action.Parse(many.String(), action.Options{MaxCalls: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Ignored) > 8 {
		t.Errorf("Ignored has %d notes; want it bounded", len(r.Ignored))
	}
}
