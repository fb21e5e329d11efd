package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
)

func strp(s string) *string { return &s }
func intp(n int) *int       { return &n }

func TestQuery(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want string // JSON of Output
	}{
		{"identity", Input{Filter: ".", Input: json.RawMessage(`{"a":1}`)},
			`{"results":[{"a":1}],"count":1,"truncated":false}`},
		{"null input like jq -n", Input{Filter: "[range(3)]"},
			`{"results":[[0,1,2]],"count":1,"truncated":false}`},
		{"explicit null input", Input{Filter: ". == null", Input: json.RawMessage(`null`)},
			`{"results":[true],"count":1,"truncated":false}`},
		{"big integers stay exact", Input{Filter: ".n", Input: json.RawMessage(`{"n":12345678901234567890}`)},
			`{"results":[12345678901234567890],"count":1,"truncated":false}`},
		{"big integer arithmetic", Input{Filter: ".n + 1", Input: json.RawMessage(`{"n":12345678901234567890}`)},
			`{"results":[12345678901234567891],"count":1,"truncated":false}`},
		{"stream of inputText values", Input{Filter: ".a", InputText: strp("{\"a\":1} {\"a\":2}\n{}")},
			`{"results":[1,2,null],"count":3,"truncated":false}`},
		{"variables sorted and bound", Input{Filter: "[$b, $a]", Variables: map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`"x"`)}},
			`{"results":[["x",1]],"count":1,"truncated":false}`},
		{"limit truncates", Input{Filter: "range(10)", Limit: intp(3)},
			`{"results":[0,1,2],"count":3,"truncated":true}`},
		{"limit exact is not truncated", Input{Filter: "range(3)", Limit: intp(3)},
			`{"results":[0,1,2],"count":3,"truncated":false}`},
		{"infinite generator stops at limit", Input{Filter: "repeat(1)", Limit: intp(2)},
			`{"results":[1,1],"count":2,"truncated":true}`},
		{"no results", Input{Filter: "empty"},
			`{"results":[],"count":0,"truncated":false}`},
		{"nan and infinities", Input{Filter: "[nan, infinite, -infinite]"},
			`{"results":[[null,1.7976931348623157e+308,-1.7976931348623157e+308]],"count":1,"truncated":false}`},
		{"env is empty", Input{Filter: "$ENV | length"},
			`{"results":[0],"count":1,"truncated":false}`},
		{"halt stops quietly", Input{Filter: "1, halt, 2"},
			`{"results":[1],"count":1,"truncated":false}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Query(context.Background(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("Query = %s\nwant    %s", b, tc.want)
			}
		})
	}
}

func TestQueryErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       Input
		wantCode abi.Code
		want     string
	}{
		{"parse error", Input{Filter: ".a |"}, abi.CodeInvalidArguments, "invalid filter"},
		{"unknown function", Input{Filter: "nosuchfn(1)"}, abi.CodeInvalidArguments, "compile filter"},
		{"undefined variable", Input{Filter: "$x"}, abi.CodeInvalidArguments, "compile filter"},
		{"bad variable name", Input{Filter: ".", Variables: map[string]json.RawMessage{"a-b": json.RawMessage(`1`)}}, abi.CodeInvalidArguments, "not an identifier"},
		{"both inputs", Input{Filter: ".", Input: json.RawMessage(`1`), InputText: strp("1")}, abi.CodeInvalidArguments, "not both"},
		{"bad inputText", Input{Filter: ".", InputText: strp("{} {oops")}, abi.CodeInvalidArguments, "inputText value 2 is not JSON"},
		{"empty inputText", Input{Filter: ".", InputText: strp("  ")}, abi.CodeInvalidArguments, "holds no JSON value"},
		{"limit zero", Input{Filter: ".", Limit: intp(0)}, abi.CodeInvalidArguments, "limit must be between"},
		{"runtime error", Input{Filter: ".a + 1", Input: json.RawMessage(`{"a":"x"}`)}, abi.CodeToolError, "filter error"},
		{"error function", Input{Filter: `error("custom")`}, abi.CodeToolError, "custom"},
		{"import refused", Input{Filter: `import "x" as x; .`}, abi.CodeInvalidArguments, "compile filter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Query(context.Background(), tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			var ae *abi.Error
			code := abi.CodeToolError
			if errors.As(err, &ae) {
				code = ae.Code
			}
			if code != tc.wantCode {
				t.Errorf("code = %s, want %s", code, tc.wantCode)
			}
		})
	}
}

func TestQueryCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Query(ctx, Input{Filter: "[range(1e9)] | length"})
	if err == nil {
		t.Fatal("a cancelled context did not stop the filter")
	}
}
