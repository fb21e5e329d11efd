package observation_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/observation"
)

func TestCall(t *testing.T) {
	tests := []struct {
		name string
		env  abi.Envelope
		want string
	}{
		{"success", abi.Envelope{ToolID: "core:echo", Status: abi.StatusSuccess, Output: json.RawMessage(`{"a":1}`)},
			`Observation: Tool core:echo executed successfully. Result: {"a":1}`},
		{"success null", abi.Envelope{ToolID: "core:echo", Status: abi.StatusSuccess},
			`Observation: Tool core:echo executed successfully. Result: null`},
		{"timeout", abi.Failure("core:spin", abi.Errorf(abi.CodeTimeout, "call exceeded 10s")),
			`Observation: Error - Tool core:spin failed (TIMEOUT): call exceeded 10s`},
		{"invalid", abi.Failure("GetPlayerInfo", abi.Errorf(abi.CodeInvalidArguments, "unknown parameter 'playerId', did you mean 'player_id'?")),
			`Observation: Error - Invalid parameters for GetPlayerInfo: unknown parameter 'playerId', did you mean 'player_id'?`},
		{"unknown", abi.Failure("core:ecko", abi.Errorf(abi.CodeUnknownTool, "unknown tool 'core:ecko'; did you mean 'core:echo'?")),
			`Observation: Error - Unknown tool 'core:ecko'; did you mean 'core:echo'?`},
		{"skipped", abi.Failure("core:echo", abi.Errorf(abi.CodeSkipped, "skipped")),
			`Observation: Skipped - Tool core:echo was not run because an earlier call in the same ACTION failed.`},
		{"malformed", abi.Failure("", abi.Errorf(abi.CodeMalformedAction, "element <String> is not closed").WithDetails(map[string]any{"line": 3, "column": 9, "hint": "wrap code in <![CDATA[...]]>"})),
			`Observation: Error - Malformed ACTION block (line 3, column 9): element <String> is not closed Hint: wrap code in <![CDATA[...]]> Nothing was run; send the corrected ACTION block.`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := observation.Call(tc.env, observation.Options{}); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestCallTruncatesAtRuneBoundary(t *testing.T) {
	out, _ := json.Marshal(strings.Repeat("é", 100))
	got := observation.Call(abi.Envelope{ToolID: "t:x", Output: out}, observation.Options{MaxResult: 10})
	if !strings.Contains(got, "…[truncated: ") {
		t.Fatalf("no truncation marker: %q", got)
	}
	body := strings.SplitN(strings.SplitN(got, "Result: ", 2)[1], "…", 2)[0]
	for _, r := range body {
		if r == '\uFFFD' {
			t.Fatalf("split rune in %q", body)
		}
	}
}

func TestTurn(t *testing.T) {
	got := observation.Turn([]abi.Envelope{
		{ToolID: "a:b", Output: json.RawMessage(`1`)},
		abi.Failure("a:c", abi.Errorf(abi.CodeToolError, "boom")),
	}, observation.Options{})
	want := "Observation: Tool a:b executed successfully. Result: 1\nObservation: Error - Tool a:c failed (TOOL_ERROR): boom"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func ExampleCall() {
	env := abi.Envelope{ToolID: "core:echo", Status: abi.StatusSuccess, Output: json.RawMessage(`{"text":"hi"}`)}
	fmt.Println(observation.Call(env, observation.Options{}))
	// Output:
	// Observation: Tool core:echo executed successfully. Result: {"text":"hi"}
}
