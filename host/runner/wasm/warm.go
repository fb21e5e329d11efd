package wasm

import "context"

// Warm waits until the tool's pool has made its first instances, or
// could not, or ctx ends, and reports what it holds: a server warms its
// catalogue with it before it says it is ready, and the CLI before the
// calls of a model output (docs/POOLS.md, "Warm ahead of demand"). The
// pool fills on its own after Prepare; Warm only waits. A failed fill
// is never an error: the tool's calls then make their own instances.
func (p *prepared) Warm(ctx context.Context) WarmState {
	if sp := p.slots(); sp != nil {
		return sp.warm(ctx)
	}
	return WarmNone
}
