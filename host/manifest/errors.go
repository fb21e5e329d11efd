package manifest

import (
	"strings"

	"github.com/agenthost/agenthost/abi"
)

// Error is a manifest that failed to parse, validate or load. It names the
// file, the JSON Pointer of the offending field ("" for the whole file) and
// the reason. errors.Is(err, abi.ErrLoadError) holds for every *Error, so a
// caller maps it to the LOAD_ERROR code.
type Error struct {
	Path    string // manifest file, as given (absolute after Parse)
	Pointer string // JSON Pointer into the manifest, "" for the file
	Reason  string // what is wrong, for a person
	Err     error  // underlying cause, if any
}

// Error renders "manifest PATH at POINTER: REASON: ERR", leaving out the
// empty parts.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("manifest")
	if e.Path != "" {
		b.WriteString(" " + e.Path)
	}
	if e.Pointer != "" {
		b.WriteString(" at " + e.Pointer)
	}
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports true for abi.ErrLoadError (any *abi.Error with the
// LOAD_ERROR code), so errors.Is(err, abi.ErrLoadError) holds.
func (e *Error) Is(target error) bool {
	t, ok := target.(*abi.Error)
	return ok && t.Code == abi.CodeLoadError
}

// newError builds an *Error for path at pointer.
func newError(path, pointer, reason string, err error) *Error {
	return &Error{Path: path, Pointer: pointer, Reason: reason, Err: err}
}
