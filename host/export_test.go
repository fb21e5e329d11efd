package host

import "github.com/agenthost/agenthost/host/runner"

// SetRunner replaces the runner for a handler key ("wasm:wasi-command",
// "wasm:extism", "external-script") and returns a reset func. It is a test
// seam for measuring the host's own per-call work.
func SetRunner(h *Host, key string, r runner.Runner) (reset func()) {
	old := h.runners[key]
	h.runners[key] = r
	return func() { h.runners[key] = old }
}

// WarmOrder returns the IDs Warm would prepare for ids, in its order.
func WarmOrder(h *Host, ids ...string) []string {
	var out []string
	for _, t := range h.warmTargets(ids) {
		out = append(out, t.ToolID)
	}
	return out
}
