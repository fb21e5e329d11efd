package wasm

// CompiledCount returns the number of distinct modules r compiled.
func CompiledCount(r *Runner) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.compiled)
}

// Startups returns how many start-ups r ran to take a snapshot.
func Startups(r *Runner) int64 { return r.startups.Load() }
