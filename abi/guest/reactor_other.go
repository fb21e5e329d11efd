//go:build !wasip1

package guest

import (
	"io"
	"os"
)

// register reports false: outside wasip1 there is no reactor, so Run
// always serves stdin (see reactor_wasip1.go).
func register(handler, func()) bool { return false }

// commandStdin is a command's stdin: os.Stdin outside wasip1.
func commandStdin(func()) io.Reader { return os.Stdin }
