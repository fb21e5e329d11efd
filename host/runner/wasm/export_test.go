package wasm

// CompiledCount returns the number of distinct modules r compiled.
func CompiledCount(r *Runner) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.compiled)
}
