package wasm

import (
	"context"
	"errors"
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

// compileOn returns the compiled module for sum, compiling it once: for
// the interpreter when interp (tier.go), else for the compiler.
func (r *Runner) compileOn(ctx context.Context, interp bool, sum string, code []byte) (wazero.CompiledModule, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errors.New("runner closed")
	}
	table := r.compiled
	if interp {
		table = r.tier.compiled
	}
	e, ok := table[sum]
	if !ok {
		e = &compileEntry{}
		table[sum] = e
	}
	if interp {
		// One more tool on this interpreter module, until it retires
		// (tier.go, releaseInterp).
		if r.tier.refs == nil {
			r.tier.refs = map[string]int{}
		}
		r.tier.refs[sum]++
	}
	r.compiling++
	r.mu.Unlock()
	e.once.Do(func() {
		if interp {
			e.mod, e.err = r.compileInterp(ctx, code)
		} else {
			e.err = r.compiledFiles.Guard(code, func() (err error) { e.mod, err = r.compileModule(ctx, code); return err })
		}
		e.done.Store(true)
	})
	r.mu.Lock()
	r.compiling--
	last := r.closed && r.compiling == 0
	r.mu.Unlock()
	if last {
		// Close came during the compilation: release the runtime now.
		_ = r.releaseRuntime(context.Background())
		return nil, errors.New("runner closed")
	}
	if e.err != nil {
		// Let a later Prepare retry (e.g. after a cancelled context).
		r.mu.Lock()
		if table[sum] == e {
			delete(table, sum)
			if interp {
				delete(r.tier.refs, sum)
			}
		}
		r.mu.Unlock()
	}
	return e.mod, e.err
}
