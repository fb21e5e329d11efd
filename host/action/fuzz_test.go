package action_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/action"
)

// FuzzParse checks, for any output: Parse never panics, always returns a
// Result, fails only with MALFORMED_ACTION and a position, is
// deterministic, yields only string / []any / map[string]any values, and a
// successful parse round-trips through Render. The seed corpus is every
// golden input plus testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, c := range loadGoldens(f) {
		f.Add(c.input)
	}
	f.Fuzz(func(t *testing.T, out string) {
		opts := action.Options{MaxBytes: 64 << 10}
		r, err := action.Parse(out, opts)
		if r == nil {
			t.Fatal("nil Result")
		}
		if !strings.Contains(out, r.ResponseText) {
			t.Fatalf("responseText %q is not part of the output", r.ResponseText)
		}
		r2, err2 := action.Parse(out, opts)
		if !sameResult(r, err, r2, err2) {
			t.Fatal("Parse is not deterministic")
		}
		if err != nil {
			var ae *abi.Error
			if !errors.As(err, &ae) || ae.Code != abi.CodeMalformedAction {
				t.Fatalf("error %v is not MALFORMED_ACTION", err)
			}
			d, ok := ae.Details.(map[string]any)
			if !ok || d["line"].(int) < 1 || d["column"].(int) < 1 || d["hint"] == "" {
				t.Fatalf("bad details %#v", ae.Details)
			}
			return
		}
		for _, c := range r.Calls {
			if c.Tool == "" || c.Args == nil {
				t.Fatalf("bad call %#v", c)
			}
			checkValue(t, c.Args)
		}
		checkRoundTrip(t, out, r)
	})
}

func sameResult(a *action.Result, aerr error, b *action.Result, berr error) bool {
	x, _ := json.Marshal([]any{a, a.Ignored, a.Found, errString(aerr)})
	y, _ := json.Marshal([]any{b, b.Ignored, b.Found, errString(berr)})
	return string(x) == string(y)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func checkValue(t *testing.T, v any) {
	t.Helper()
	switch v := v.(type) {
	case string:
	case []any:
		if len(v) == 0 {
			t.Fatal("empty list")
		}
		for _, e := range v {
			checkValue(t, e)
		}
	case map[string]any:
		for _, e := range v {
			checkValue(t, e)
		}
	default:
		t.Fatalf("value of type %T", v)
	}
}
