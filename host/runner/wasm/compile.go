package wasm

import (
	"context"
	"runtime"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// compileSlots bounds the modules compiled at once in the process to the
// core count, and each compiles its functions on that many goroutines
// (wazero's compilation workers). Preparations of several tools start
// together (a model output naming five tools, a server warming its
// catalogue), so without the bound they would all compile at once, each
// taking longer than it needs to and holding its compiler's memory;
// without the workers one module would use one core while the others
// wait (docs/POOLS.md, "Warm ahead of demand").
var compileSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))

// compileModule compiles code (or reads it from the compilation cache)
// once a compile slot is free. A context that ends while waiting for a
// slot ends the wait.
func (r *Runner) compileModule(ctx context.Context, code []byte) (wazero.CompiledModule, error) {
	select {
	case compileSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-compileSlots }()
	return r.rt.CompileModule(experimental.WithCompilationWorkers(ctx, cap(compileSlots)), code)
}
