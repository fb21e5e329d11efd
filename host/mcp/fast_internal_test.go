package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/hosttest"
)

// TestResultJSON: the fast paths' result is the bytes encoding/json
// writes for resultOf, for every shape of output and for failures.
func TestResultJSON(t *testing.T) {
	ok := func(out string) abi.Envelope {
		return abi.Envelope{ToolID: "core:echo", Status: abi.StatusSuccess, Output: json.RawMessage(out)}
	}
	tests := []struct {
		name string
		env  abi.Envelope
	}{
		{"object", ok(`{"a":1}`)},
		{"object with spaces", ok(" \n{ \"a\" : [1, 2] ,\"b\":{}}\t")},
		{"HTML and line separators", ok("{\"h\":\"<b>&</b>\",\"s\":\"\u2028\u2029\"}")},
		{"escapes", ok(`{"q":"\"\\\/\n\u0000"}`)},
		{"invalid UTF-8 in a string", ok("{\"x\":\"\xff\xfe\"}")},
		{"array", ok(`[1,{"a":2}]`)},
		{"string", ok(`"text <x>"`)},
		{"number", ok(`42`)},
		{"null", ok(`null`)},
		{"empty", ok(``)},
		{"failure", abi.Failure("core:echo", abi.Errorf(abi.CodeInvalidArguments, "bad <args>"))},
		{"failure without an error", abi.Envelope{ToolID: "core:echo", Status: abi.StatusFailure, Output: json.RawMessage(`{"a":1}`)}},
	}
	for _, tc := range tests {
		want, werr := json.Marshal(resultOf("core__echo", tc.env))
		got, gerr := resultJSON("core__echo", tc.env)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Errorf("%s:\n got  %s (%v)\n want %s (%v)", tc.name, got, gerr, want, werr)
		}
	}
}

// BenchmarkPlain times the fast paths' decoding of a plain tools/call
// (decode-ns/op): in a loop (warm), and right after each core:echo
// host.Call (after-call), whose guest leaves the host's caches cold.
func BenchmarkPlain(b *testing.B) {
	h := hosttest.NewHost(b, nil, hosttest.Toolpacks(b))
	srv := New(h, Options{})
	defer srv.Close()
	msg := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"core__echo","arguments":{"a":1}}}`)
	for _, tc := range []struct {
		name   string
		before func()
	}{
		{"warm", func() { srv.plain(msg) }},
		{"after-call", func() { h.Call(context.Background(), "core:echo", json.RawMessage(`{"a":1}`)) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var spent time.Duration
			for b.Loop() {
				tc.before()
				t0 := time.Now()
				if _, ok := srv.plain(msg); !ok {
					b.Fatal("not plain")
				}
				spent += time.Since(t0)
			}
			b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "decode-ns/op")
		})
	}
}
