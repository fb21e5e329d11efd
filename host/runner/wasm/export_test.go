package wasm

import (
	"github.com/agenthost/agenthost/host/internal/sandboxfs"
	"github.com/agenthost/agenthost/host/policy"
)

// SetCheckerFor replaces how r gets a grant's file-rule checker.
func SetCheckerFor(r *Runner, f func(*policy.Grant) (sandboxfs.Checker, error)) (reset func()) {
	old := r.checkerFor
	r.checkerFor = f
	return func() { r.checkerFor = old }
}

// CompiledCount returns the number of distinct modules r compiled.
func CompiledCount(r *Runner) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.compiled)
}
