//go:build !wasip1

package toolcall

import "errors"

// Call fails outside a wasip1 build: the host import exists only inside
// agenthost's WASM runner. Native tests pass their own [Caller].
func Call(string, []byte) (Response, error) {
	return Response{}, errors.New("tool calls need the agenthost host import (a wasip1 build run by agenthost)")
}
