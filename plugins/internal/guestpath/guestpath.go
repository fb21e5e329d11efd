package guestpath

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/abi/guest"
)

// Guest mount points.
const (
	Workspace = "/workspace"
	Tool      = "/tool"
	Cache     = "/cache"
	Tmp       = "/tmp"
)

// Resolve returns p as a clean absolute guest path. A relative p is joined
// to /workspace; "." is /workspace itself. Backslashes are not separators.
func Resolve(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("path is empty")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	if !path.IsAbs(p) {
		p = path.Join(Workspace, p)
	}
	return path.Clean(p), nil
}

// FileError describes a failed file operation on guest path p. A missing
// file is TOOL_ERROR with a hint about relative paths, a refused access is
// PERMISSION_DENIED, anything else TOOL_ERROR wrapping err.
func FileError(op, p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return guest.Errorf(abi.CodeToolError, "%s %s: no such file or directory (relative paths are inside /workspace)", op, p)
	case errors.Is(err, fs.ErrPermission):
		return guest.Errorf(abi.CodePermissionDenied, "%s %s: permission denied by the sandbox", op, p)
	}
	return fmt.Errorf("%s %s: %w", op, p, err)
}
