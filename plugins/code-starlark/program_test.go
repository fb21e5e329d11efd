package main

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/plugins/internal/toolcall"
	"github.com/agenthost/agenthost/plugins/internal/toolcall/toolcalltest"
)

// TestRun covers the interpreter side natively: results, names of tools,
// the log cap and every error kind with its code.
func TestRun(t *testing.T) {
	tests := []struct {
		name, code string
		code0      abi.Code
		want       string
	}{
		{"global result", "result = 1 + 1", "", `2`},
		{"main wins", "result = 1\ndef main():\n    return 'm'", "", `"m"`},
		{"dash as underscore", "result = tools.data.csv_to_json(a = 1)", "", `{"a":1}`},
		{"call with dict and kwargs", "result = call('core:echo', {'a': 1}, b = 2)", "", `{"a":1,"b":2}`},
		{"inner failure raises", "tools.x.fail()", abi.CodePermissionDenied, "x:fail failed with PERMISSION_DENIED: Observation: Error - denied (at line 1"},
		{"syntax", "if True\n  x = 1", abi.CodeInvalidArguments, "syntax error at line 2, column 1: got newline, want ':'"},
		{"steps", "while True:\n    pass", abi.CodeFuelExhausted, "more than 1000 Starlark steps"},
		{"not JSON", "def f():\n    pass\nresult = f", abi.CodeToolError, "not JSON"},
		{"empty", "  ", abi.CodeInvalidArguments, "code is empty"},
		{"positional args", "tools.fs.read('a', 'b')", abi.CodeToolError, "pass arguments by name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Run(Input{Code: tc.code}, Options{MaxSteps: 1000, Call: toolcalltest.Echo})
			if tc.code0 == "" {
				if err != nil || string(out.Result) != tc.want {
					t.Fatalf("got %s, %v; want %s", out.Result, err, tc.want)
				}
				return
			}
			var ae *abi.Error
			if !errors.As(err, &ae) || ae.Code != tc.code0 || !strings.Contains(ae.Message, tc.want) {
				t.Fatalf("got %v, want %s with %q", err, tc.code0, tc.want)
			}
		})
	}
}

func TestLogCap(t *testing.T) {
	out, err := Run(Input{Code: "for i in range(20000):\n    print('line', i)"}, Options{MaxSteps: 1e6, Call: toolcalltest.Echo})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range out.Log {
		n += len(l)
	}
	if !out.LogTruncated || n > MaxLogBytes || out.Log[0] != "line 0" {
		t.Fatalf("truncated=%v, %d bytes, first %q", out.LogTruncated, n, out.Log[0])
	}
}

// FuzzProgram runs arbitrary program text: it ends with a result or an
// *abi.Error, never a panic or a hang (the step limit bounds it).
func FuzzProgram(f *testing.F) {
	for _, s := range []string{"result = 1", "def f(x):\n    return f(x)\nresult = f(1)", "while True:\n    call('a:b', {})", "x = (", "result = {1: 2}", "fail(1)", "result = [i for i in range(10)]", "tools.a.b(1)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		if strings.Contains(code, "*") {
			t.Skip() // string and list repetition can ask for gigabytes natively; the host caps memory
		}
		_, err := Run(Input{Code: code}, Options{MaxSteps: 10000, Call: toolcalltest.Echo})
		var ae *abi.Error
		if err != nil && !errors.As(err, &ae) {
			t.Fatalf("error %v is not an *abi.Error", err)
		}
	})
}

// TestWarmProgram: the start-up's warm-up program runs (a failing one
// would warm nothing).
func TestWarmProgram(t *testing.T) {
	out, err := Run(Input{Code: warmProgram, Input: json.RawMessage(`{"w":1}`)}, Options{Call: toolcall.Echo})
	if err != nil || out.Calls != 1 || len(out.Log) != 1 {
		t.Fatalf("got %+v, %v", out, err)
	}
}

// BenchmarkInnerCall is the interpreter's share of one inner call run
// natively (outside WebAssembly), the reference for the same figure
// inside the host (host's BenchmarkCodeMode, guest-ns): ((a program of
// 50 calls − an empty program) / 50, medians over b.N rounds), with the
// answer decoded as the host's.
func BenchmarkInnerCall(b *testing.B) {
	const n = 50
	loop := Input{Code: "for i in range(50):\n    tools.core.echo(n = i)\nresult = 1"}
	empty := Input{Code: "result = 1"}
	var loops, empties []float64
	for b.Loop() {
		for _, in := range []Input{loop, empty} {
			start := time.Now()
			if _, err := Run(in, Options{Call: toolcall.Echo}); err != nil {
				b.Fatal(err)
			}
			d := float64(time.Since(start))
			if in.Code == loop.Code {
				loops = append(loops, d)
			} else {
				empties = append(empties, d)
			}
		}
	}
	b.ReportMetric((median(loops)-median(empties))/n, "inner-ns")
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
