package abi

import (
	"fmt"
)

// Code is one of the error codes of the result envelope.
type Code string

// The error codes of the result envelope.
const (
	CodeMalformedAction  Code = "MALFORMED_ACTION"
	CodeUnknownTool      Code = "UNKNOWN_TOOL"
	CodeInvalidArguments Code = "INVALID_ARGUMENTS"
	CodePermissionDenied Code = "PERMISSION_DENIED"
	CodeTimeout          Code = "TIMEOUT"
	CodeCancelled        Code = "CANCELLED"
	CodeFuelExhausted    Code = "FUEL_EXHAUSTED"
	CodeMemoryLimit      Code = "MEMORY_LIMIT"
	CodeOutputLimit      Code = "OUTPUT_LIMIT"
	CodeToolError        Code = "TOOL_ERROR"
	CodeInvalidOutput    Code = "INVALID_OUTPUT"
	CodeSkipped          Code = "SKIPPED"
	CodeLoadError        Code = "LOAD_ERROR"
	CodeInternal         Code = "INTERNAL"
	// CodeMayHaveRun is a call stopped by its server's or worker's
	// shutdown: what it did before is not known, so a client must not
	// take it for a call that did not run.
	CodeMayHaveRun Code = "MAY_HAVE_RUN"
)

// Codes lists every code in their documented order.
var Codes = []Code{
	CodeMalformedAction, CodeUnknownTool, CodeInvalidArguments, CodePermissionDenied,
	CodeTimeout, CodeCancelled, CodeFuelExhausted, CodeMemoryLimit, CodeOutputLimit, CodeToolError,
	CodeInvalidOutput, CodeSkipped, CodeLoadError, CodeInternal, CodeMayHaveRun,
}

// Error is both the wire body of a failed call ({"code","message","details"})
// and a Go error. Its Is method compares codes, so
// errors.Is(err, abi.ErrTimeout) holds for any *Error with CodeTimeout.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
}

// Sentinels, one per code, for use with errors.Is.
var (
	ErrMalformedAction  = &Error{Code: CodeMalformedAction}
	ErrUnknownTool      = &Error{Code: CodeUnknownTool}
	ErrInvalidArguments = &Error{Code: CodeInvalidArguments}
	ErrPermissionDenied = &Error{Code: CodePermissionDenied}
	ErrTimeout          = &Error{Code: CodeTimeout}
	ErrCancelled        = &Error{Code: CodeCancelled}
	ErrFuelExhausted    = &Error{Code: CodeFuelExhausted}
	ErrMemoryLimit      = &Error{Code: CodeMemoryLimit}
	ErrOutputLimit      = &Error{Code: CodeOutputLimit}
	ErrToolError        = &Error{Code: CodeToolError}
	ErrInvalidOutput    = &Error{Code: CodeInvalidOutput}
	ErrSkipped          = &Error{Code: CodeSkipped}
	ErrLoadError        = &Error{Code: CodeLoadError}
	ErrInternal         = &Error{Code: CodeInternal}
	ErrMayHaveRun       = &Error{Code: CodeMayHaveRun}
)

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error implements error as "CODE: message".
func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// WithDetails returns a copy of e carrying details.
func (e *Error) WithDetails(details any) *Error {
	c := *e
	c.Details = details
	return &c
}
