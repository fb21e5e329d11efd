// Package observation writes the text fed back to the model after a turn
// . Every wording the model sees lives here, so that it
// stays consistent and can be pinned by tests.
//
//	Observation: Tool core:echo executed successfully. Result: {"a":1}
//	Observation: Error - Tool core:echo failed (TIMEOUT): call exceeded 10s
package observation

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/abi"
)

// DefaultMaxResult is the default cap, in bytes, on the result text quoted
// in one observation line.
const DefaultMaxResult = 16 << 10

// Options tune the observation text. The zero value means the defaults.
type Options struct {
	// MaxResult caps the bytes of a result quoted in one line; longer
	// results are cut at a UTF-8 boundary and marked. 0 = DefaultMaxResult.
	MaxResult int
}

// Call renders the observation line of one call envelope.
func Call(env abi.Envelope, opts Options) string {
	if env.Error == nil {
		return fmt.Sprintf("Observation: Tool %s executed successfully. Result: %s", env.ToolID, result(env.Output, opts))
	}
	return Error(env.ToolID, env.Error)
}

// Error renders the observation line of a failed call of tool (which may be
// empty when the failure is not tied to one tool, as for MALFORMED_ACTION).
func Error(tool string, e *abi.Error) string {
	msg := strings.TrimSpace(e.Message)
	switch e.Code {
	case abi.CodeMalformedAction:
		pos := position(e)
		if strings.HasPrefix(msg, "line ") { // the parser's message already says where
			pos = ""
		}
		return "Observation: Error - Malformed ACTION block" + pos + ": " + msg + hint(e) +
			" Nothing was run; send the corrected ACTION block."
	case abi.CodeUnknownTool:
		// The registry's message already names the tool ("unknown tool 'x';
		// did you mean ...?"): say it once.
		rest := strings.TrimPrefix(msg, fmt.Sprintf("unknown tool '%s'", tool))
		rest = strings.TrimPrefix(rest, ";")
		if rest = strings.TrimSpace(rest); rest != "" {
			rest = "; " + rest
		}
		if rest == "" && msg != fmt.Sprintf("unknown tool '%s'", tool) {
			rest = ": " + msg
		}
		return fmt.Sprintf("Observation: Error - Unknown tool '%s'%s", tool, rest)
	case abi.CodeInvalidArguments:
		return fmt.Sprintf("Observation: Error - Invalid parameters for %s: %s", tool, msg)
	case abi.CodeSkipped:
		return fmt.Sprintf("Observation: Skipped - Tool %s was not run because an earlier call in the same ACTION failed.", tool)
	}
	return fmt.Sprintf("Observation: Error - Tool %s failed (%s): %s", tool, e.Code, msg)
}

// Turn joins the observation lines of a turn's envelopes with newlines.
func Turn(envs []abi.Envelope, opts Options) string {
	lines := make([]string, len(envs))
	for i, env := range envs {
		lines[i] = Call(env, opts)
	}
	return strings.Join(lines, "\n")
}

func result(out json.RawMessage, opts Options) string {
	if len(out) == 0 {
		return "null"
	}
	max := opts.MaxResult
	if max <= 0 {
		max = DefaultMaxResult
	}
	if len(out) <= max {
		return string(out)
	}
	cut := max
	for cut > 0 && out[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return fmt.Sprintf("%s…[truncated: %d of %d bytes shown]", out[:cut], cut, len(out))
}

// position renders " (line L, column C)" from the details of a
// MALFORMED_ACTION error, when present.
func position(e *abi.Error) string {
	line, col := detailInt(e.Details, "line"), detailInt(e.Details, "column")
	if line <= 0 {
		return ""
	}
	if col <= 0 {
		return fmt.Sprintf(" (line %d)", line)
	}
	return fmt.Sprintf(" (line %d, column %d)", line, col)
}

func hint(e *abi.Error) string {
	h := detailString(e.Details, "hint")
	if h == "" || strings.Contains(e.Message, h) {
		return ""
	}
	return " Hint: " + strings.TrimSpace(h)
}

// details returns e.Details as a generic map, whatever its Go type.
func details(d any) map[string]any {
	switch m := d.(type) {
	case nil:
		return nil
	case map[string]any:
		return m
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

func detailInt(d any, key string) int {
	switch v := details(d)[key].(type) {
	case float64:
		return int(v)
	case int:
		return v
	}
	return 0
}

func detailString(d any, key string) string {
	s, _ := details(d)[key].(string)
	return s
}

// IgnoredBlocks is the note appended when a model sent n more ACTION blocks
// after the first, which alone ran.
func IgnoredBlocks(n int) string {
	blocks := "block was"
	if n > 1 {
		blocks = "blocks were"
	}
	return fmt.Sprintf("Note: only the first ACTION block of a reply runs; %d more %s ignored. Put every call in one ACTION block.", n, blocks)
}
