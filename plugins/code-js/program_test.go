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

// TestRun covers the interpreter side natively: await, console, tool
// names, and every error kind with its code.
func TestRun(t *testing.T) {
	tests := []struct {
		name, code string
		code0      abi.Code
		want       string
	}{
		{"return", "return 1 + 1", "", `2`},
		{"await a tool", "const r = await tools.core.echo({a: input});\nconsole.log('got', r.a);\nreturn r", "", `{"a":7}`},
		{"call by id", "return call('data:csv-to-json', {b: 2})", "", `{"b":2}`},
		{"undefined is null", "return undefined", "", `null`},
		{"caught inner failure", "try { tools.x.fail({}) } catch (e) { return e.code }", "", `"PERMISSION_DENIED"`},
		{"uncaught inner failure", "await tools.x.fail({})", abi.CodePermissionDenied, "x:fail failed with PERMISSION_DENIED: Observation: Error - denied"},
		{"syntax", "let x = 1;\nreturn (1 +;", abi.CodeInvalidArguments, "syntax error at line 2"},
		{"throw", "throw new Error('boom')", abi.CodeToolError, "boom"},
		{"throw in a later line", "let a = 1;\nnull.x", abi.CodeToolError, "line 2"},
		{"empty", " ", abi.CodeInvalidArguments, "code is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Run(Input{Code: tc.code, Input: json.RawMessage("7")}, toolcalltest.Echo)
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

// TestWarmProgram: the start-up's warm-up program runs (a failing one
// would warm nothing).
func TestWarmProgram(t *testing.T) {
	out, err := Run(Input{Code: warmProgram, Input: json.RawMessage(`{"w":1}`)}, toolcall.Echo)
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
	loop := Input{Code: "for (let i = 0; i < 50; i++) { tools.core.echo({n: i}) }\nreturn 1"}
	empty := Input{Code: "return 1"}
	var loops, empties []float64
	for b.Loop() {
		for _, in := range []Input{loop, empty} {
			start := time.Now()
			if _, err := Run(in, toolcall.Echo); err != nil {
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

// TestWarm: the start-up leaves the next program's runtime made, with
// no global of the warm-up program or of the priming in it; the program
// that takes it sees the usual globals and its own caller, and the one
// after it gets a runtime of its own.
func TestWarm(t *testing.T) {
	warm()
	if next == nil {
		t.Fatal("warm made no runtime for the next program")
	}
	probe := Input{Code: "return [typeof r, typeof t, typeof tools, typeof console.log, (await tools.x.y({v: 1})).v]"}
	for i := range 2 {
		out, err := Run(probe, toolcalltest.Echo)
		if err != nil || string(out.Result) != `["undefined","undefined","object","function",1]` {
			t.Fatalf("program %d: got %s, %v", i, out.Result, err)
		}
		if next != nil {
			t.Fatalf("program %d left a runtime for the next", i)
		}
	}
}
