package credential

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// liveOf returns a Live that accepts the tokens h verifies.
func liveOf(h *HMAC) Live {
	return func(tok string) bool { _, err := h.Verify(tok, "", ""); return err == nil }
}

// escapeAll writes every byte of s as a \u00XX escape.
func escapeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\u%04x`, s[i])
	}
	return b.String()
}

// TestRedactor pins where a Redactor finds a secret: as written, in a
// JSON literal as decoded, glued to other text, after any number of
// decoys, in nested details; and that what holds none is left as is.
func TestRedactor(t *testing.T) {
	h, _ := NewHMAC([]byte(strings.Repeat("k", 32)))
	ctx := context.Background()
	c, _ := h.Mint(ctx, Request{Tenant: "a", Tool: "b:c", Name: "n"})
	tok := c.Token
	r := NewRedactor([]string{"hunter2-secret", `pa"ss\word`, "abc"}, liveOf(h))
	for _, tc := range []struct {
		name, in string
		want     string // "" means: unchanged
	}{
		{"plain", "x " + tok + " y", "x [REDACTED] y"},
		{"JSON escape", `{"t":"\u0061` + tok[1:] + `"}`, `{"t":"[REDACTED]"}`},
		{"all escaped", `{"t":"` + escapeAll(tok) + `"}`, `{"t":"[REDACTED]"}`},
		{"escaped dot", `{"t":"` + strings.Replace(tok, ".", `\u002e`, 1) + `"}`, `{"t":"[REDACTED]"}`},
		{"escaped key", `{"` + escapeAll(tok) + `":1}`, `{"[REDACTED]":1}`},
		{"cut document", `{"t":"\u0061` + tok[1:], `{"t":"[REDACTED]`},
		{"glued after", tok + "xyz", "[REDACTED]xyz"},
		{"glued before", "ahc1." + tok, "ahc1.[REDACTED]"},
		{"after a decoy payload", "ahc1.x." + tok, "ahc1.x.[REDACTED]"},
		{"after 100 decoys", strings.Repeat("ahc1.AAAA.BBBB ", 100) + tok, strings.Repeat("ahc1.AAAA.BBBB ", 100) + "[REDACTED]"},
		{"twice", tok + "," + tok, "[REDACTED],[REDACTED]"},
		{"secret", "use hunter2-secret now", "use [REDACTED] now"},
		{"escaped secret", `{"p":"pa\"ss\\word"}`, `{"p":"[REDACTED]"}`},
		{"escaped secret in text", `log: "\u0068unter2-secret`, `log: "[REDACTED]`},
		{"stray quote", `it"s \u0068unter2-secret`, `it"s [REDACTED]`},
		{"short secret kept", "abc", ""},
		{"decoys alone", "ahc1.AAAA.BBBB ahc1..x ahc1.", ""},
		{"expired or forged", "ahc1." + strings.Repeat("A", 10) + "." + strings.Repeat("B", 43), ""},
		{"escapes without secrets", `{"a":"\u00e9\n\ud83d\ude00"}`, ""},
		{"double escape is text", `{"a":"\\u0068unter2"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if got := r.String(tc.in); got != want {
				t.Fatalf("got  %q\nwant %q", got, want)
			}
			if r.Contains(tc.in) != (tc.want != "") {
				t.Fatalf("Contains = %v", !(tc.want != ""))
			}
		})
	}
	details := map[string]any{"toolCode": tok, "list": []string{"x", "\u0061" + tok[1:]}, "n": 3, "deep": map[string]any{tok: "k"}}
	v, changed := r.Value(details)
	b, _ := json.Marshal(v)
	if !changed || strings.Contains(string(b), "ahc1.") || strings.Count(string(b), Mark) != 3 || !strings.Contains(string(b), `"n":3`) {
		t.Fatalf("details: %v %s", changed, b)
	}
	clean := map[string]any{"toolCode": "E_X", "n": 1}
	if v, changed := r.Value(clean); changed || v.(map[string]any)["toolCode"] != "E_X" {
		t.Fatalf("clean details changed: %v", v)
	}
	if v, changed := r.Value(map[string]any{"ch": make(chan int), "t": tok}); !changed || v != nil {
		t.Fatalf("details that cannot be encoded: %v", v)
	}
	var nilR *Redactor
	if nilR.String(tok) != tok || NewRedactor([]string{"ab"}, nil) != nil {
		t.Fatal("a nil Redactor")
	}
	if got := Find(strings.Repeat("ahc1.A.B ", 40)); len(got) != 40 {
		t.Fatalf("Find stops at %d", len(got))
	}
}

// FuzzRedact: no input panics; a live token anywhere in a JSON string,
// whatever surrounds it and whichever of its bytes are escaped, is gone
// from the decoded result; input without the prefix, an escape or a
// secret comes back unchanged.
func FuzzRedact(f *testing.F) {
	h, _ := NewHMAC([]byte(strings.Repeat("k", 32)))
	c, _ := h.Mint(context.Background(), Request{Tenant: "a", Tool: "b:c", Name: "n"})
	tok := c.Token
	r := NewRedactor([]string{"hunter2-secret"}, liveOf(h))
	f.Add("", "", uint64(0), `{"a":"\u0061"}`)
	f.Add("ahc1.", "xyz", uint64(1), "ahc1.AAAA.BBBB")
	f.Add("ahc1.x.", ".", ^uint64(0), `"\ud83d`)
	f.Add(`"`, `\`, uint64(0xf0f0), `\u0061hc1.`)
	f.Fuzz(func(t *testing.T, pre, post string, mask uint64, text string) {
		out := r.String(text)
		if !strings.Contains(text, "ahc1.") && !strings.Contains(text, `\`) && !strings.Contains(text, "hunter2-secret") && out != text {
			t.Fatalf("changed clean text %q to %q", text, out)
		}
		value := pre + tok + post
		var lit strings.Builder
		for i, ru := range value {
			switch {
			case mask>>(uint(i)%64)&1 == 1:
				lit.WriteString(escapeAll(string(ru)))
			case ru == '"' || ru == '\\' || ru < 0x20:
				b, _ := json.Marshal(string(ru))
				lit.Write(b[1 : len(b)-1])
			default:
				lit.WriteRune(ru)
			}
		}
		doc := `{"k":"` + lit.String() + `"}`
		var v map[string]string
		if json.Unmarshal([]byte(doc), &v) != nil {
			return // pre or post made it other than one JSON string
		}
		red := r.String(doc)
		var got map[string]string
		if err := json.Unmarshal([]byte(red), &got); err != nil {
			if strings.Contains(unescape(red), tok) {
				t.Fatalf("the token survives in %q", red)
			}
			return
		}
		for k, s := range got {
			if strings.Contains(k+s, tok) {
				t.Fatalf("the token survives in %q", red)
			}
		}
	})
}

// TestRedactLinear pins that the scan is linear: on inputs built to
// make a naive scan quadratic, the bytes handed to Live stay within a
// small multiple of the input's size.
func TestRedactLinear(t *testing.T) {
	const n = 1 << 16
	for name, in := range map[string]string{
		"prefixes":        strings.Repeat("ahc1.", n/5),
		"nested prefixes": strings.Repeat("ahc1.ahc1", n/9) + ".B",
		"dotted":          strings.Repeat("ahc1.A.", n/7),
		"long runs":       "ahc1." + strings.Repeat("A", n) + "." + strings.Repeat("B", n),
		"escaped":         `"` + strings.Repeat(`\u0061hc1.A.B`, n/13) + `"`,
	} {
		scanned := 0
		r := NewRedactor(nil, func(tok string) bool { scanned += len(tok); return false })
		r.String(in)
		if scanned > 4*len(in) {
			t.Errorf("%s: %d bytes verified for %d of input", name, scanned, len(in))
		}
	}
}

// BenchmarkRedact redacts 1 MiB JSON documents: "decoys" holds escapes
// and token-shaped strings in every literal (the worst case: each is
// decoded and each decoy verified), "clean" holds neither (the common
// case: one pass looking for the prefix and the secrets).
func BenchmarkRedact(b *testing.B) {
	h, _ := NewHMAC([]byte(strings.Repeat("k", 32)))
	c, _ := h.Mint(context.Background(), Request{Tenant: "a", Tool: "b:c", Name: "n"})
	r := NewRedactor([]string{c.Token, "hunter2-secret"}, liveOf(h))
	for _, bc := range []struct{ name, item string }{
		{"decoys", `"caf\u00e9 ahc1.AAAA.BBBB line\nbreak",`},
		{"clean", `"a plain line of output, nothing to hide",`},
	} {
		var doc strings.Builder
		doc.WriteString(`{"items":[`)
		for doc.Len() < 1<<20 {
			doc.WriteString(bc.item)
		}
		doc.WriteString(`"end"]}`)
		s := doc.String()
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				r.String(s)
			}
		})
	}
}
