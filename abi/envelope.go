package abi

import "encoding/json"

// Status is the outcome of a call or of a whole turn.
type Status string

// The statuses of a result envelope. StatusPartial is only used for a turn of several
// calls where some succeeded.
const (
	StatusSuccess Status = "success"
	StatusFailure Status = "failure"
	StatusPartial Status = "partial"
)

// Envelope is the result of one tool call, as returned by the library, the
// CLI and the HTTP API.
type Envelope struct {
	ToolID     string          `json:"toolId"`
	Status     Status          `json:"status"`
	Output     json.RawMessage `json:"output"`
	Error      *Error          `json:"error"`
	Logs       []string        `json:"logs"`
	DurationMs float64         `json:"durationMs"`
	Usage      Usage           `json:"usage"`
}

// Usage reports the resources a call consumed. Fuel is present only when
// the call was metered.
type Usage struct {
	Fuel        *uint64 `json:"fuel,omitempty"`
	MemoryBytes uint64  `json:"memoryBytes"`
}

// Failure returns a failure envelope for toolID carrying err.
func Failure(toolID string, err *Error) Envelope {
	return Envelope{ToolID: toolID, Status: StatusFailure, Output: json.RawMessage("null"), Error: err, Logs: []string{}}
}
