package action

import (
	"fmt"
	"unicode/utf8"

	"github.com/agenthost/agenthost/abi"
)

// perr is a parse failure at a byte offset of the whole output. It becomes an
// *abi.Error once the offset is turned into a line and column.
type perr struct {
	pos  int
	msg  string
	hint string
}

func failf(pos int, hint, format string, args ...any) *perr {
	return &perr{pos: pos, hint: hint, msg: fmt.Sprintf(format, args...)}
}

// abi renders the failure as MALFORMED_ACTION with the position in the
// message and in Details.
func (e *perr) abi(s string) *abi.Error {
	line, col := position(s, e.pos)
	msg := fmt.Sprintf("line %d, column %d: %s", line, col, e.msg)
	if e.hint != "" {
		msg += "; " + e.hint
	}
	return &abi.Error{
		Code:    abi.CodeMalformedAction,
		Message: msg,
		Details: map[string]any{"line": line, "column": col, "hint": e.hint},
	}
}

// position returns the 1-based line and column (in characters) of byte
// offset pos in s. LF, CRLF and a lone CR each end a line.
func position(s string, pos int) (line, col int) {
	if pos > len(s) {
		pos = len(s)
	}
	if pos < 0 {
		pos = 0
	}
	line = 1
	start := 0
	for i := 0; i < pos; i++ {
		switch s[i] {
		case '\n':
			line++
			start = i + 1
		case '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				continue
			}
			line++
			start = i + 1
		}
	}
	return line, utf8.RuneCountInString(s[start:pos]) + 1
}

// Hints shared by several failures.
const (
	hintFinish   = "finish the block: <ACTION><tool><param>value</param></tool></ACTION>"
	hintCDATA    = "wrap a value that contains '<' or '&' in <![CDATA[...]]>"
	hintFormB    = "a tool ID that is not an XML name needs form B: <ACTION><tool_id>ID</tool_id><inputs><input name=\"p\">v</input></inputs></ACTION>"
	hintCloseAll = "close every element you opened, then end the block with </ACTION>"
	hintShape    = "write <ACTION><namespace:tool><param>value</param></namespace:tool></ACTION>"
)
