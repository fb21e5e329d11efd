package extism

import (
	"context"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/internal/netguard"
	"github.com/agenthost/agenthost/host/runner"
)

// SetNetwork replaces the resolver and dialer the runner's guards use.
func SetNetwork(r *Runner, res netguard.Resolver, dial netguard.DialFunc) (reset func()) {
	oldRes, oldDial := r.resolver, r.dial
	r.resolver, r.dial = res, dial
	return func() { r.resolver, r.dial = oldRes, oldDial }
}

// Reused returns a function that calls p's entry point again and again
// on ONE instance, for the benchmarks that measure the ABI's per-call
// cost against raw wazero's reused-instance path. Run never does this:
// every call gets a fresh instance.
func Reused(ctx context.Context, p runner.Prepared) (call func(input []byte) ([]byte, *abi.Error), closeFn func(), err error) {
	pp := p.(*prepared)
	plain, err := pp.r.plain(ctx, pp.mod)
	if err != nil {
		return nil, nil, err
	}
	in := pp.newInstance()
	callCtx := in.context(ctx)
	mod, err := pp.r.rt.InstantiateModule(callCtx, plain, pp.moduleConfig(ctx, in))
	if err != nil {
		return nil, nil, err
	}
	in.guest = mod.Memory()
	for _, name := range pp.inits {
		if _, err := mod.ExportedFunction(name).Call(callCtx); err != nil {
			mod.Close(ctx)
			return nil, nil, err
		}
	}
	fn := mod.ExportedFunction(pp.entry)
	call = func(input []byte) ([]byte, *abi.Error) {
		res, err := pp.invoke(callCtx, in, fn, input)
		r := pp.result(ctx, in, res, err)
		return r.Output, r.Err
	}
	return call, func() { mod.Close(ctx) }, nil
}

// FreshPhases creates one fresh instance of p the way Run does without a
// snapshot and returns how long instantiation and the runtime
// initialisers took, for the benchmark that shows what a pre-initialised
// snapshot saves.
func FreshPhases(ctx context.Context, p runner.Prepared) (instantiate, initialise time.Duration, err error) {
	pp := p.(*prepared)
	plain, err := pp.r.plain(ctx, pp.mod)
	if err != nil {
		return 0, 0, err
	}
	in := pp.newInstance()
	callCtx := in.context(ctx)
	start := time.Now()
	mod, err := pp.r.rt.InstantiateModule(callCtx, plain, pp.moduleConfig(ctx, in))
	if err != nil {
		return 0, 0, err
	}
	defer mod.Close(ctx)
	instantiate = time.Since(start)
	start = time.Now()
	for _, name := range pp.inits {
		if _, err := mod.ExportedFunction(name).Call(callCtx); err != nil {
			return 0, 0, err
		}
	}
	return instantiate, time.Since(start), nil
}

// HasSnapshot reports whether p restores a pre-initialised snapshot.
func HasSnapshot(p runner.Prepared) bool { return p.(*prepared).snap != nil }

// SetDoublingGrowth makes plugin memories grow by doubling (the former
// policy) instead of by a quarter; it returns the restore.
func SetDoublingGrowth(on bool) func() {
	saved := growDoubling
	growDoubling = on
	return func() { growDoubling = saved }
}
