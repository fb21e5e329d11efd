package wasm

import (
	"sync"
	"time"
)

// CompiledCount returns the number of distinct modules r compiled.
func CompiledCount(r *Runner) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.compiled)
}

// Startups returns how many start-ups r ran to take a snapshot.
func Startups(r *Runner) int64 { return r.startups.Load() }

// The package's tests of the compiled tier (pools, snapshots, parking)
// run without tiering; the tiering tests turn it on (Tiered).
func init() { tieringDefault = false }

// Tiered returns opts with tiering on whatever the default and the
// environment say.
func Tiered(opts Options) Options {
	opts.forceTiering = true
	return opts
}

// HoldUpgrades makes r's background compiles wait until release is
// called; the caller must call it.
func HoldUpgrades(r *Runner) (release func()) {
	h := make(chan struct{})
	r.tier.hold = h
	var once sync.Once
	return func() { once.Do(func() { close(h) }) }
}

// Tier names the tier p's calls run on now: "interpreter" or "compiled".
func Tier(p any) string {
	switch p := p.(type) {
	case *tiered:
		if p.next.Load() == nil {
			return "interpreter"
		}
	case *prepared:
		if p.interp {
			return "interpreter"
		}
	}
	return "compiled"
}

// WaitTier starts p's background compile and waits until it has ended.
func WaitTier(p any) {
	if t, ok := p.(*tiered); ok {
		t.start()
		<-t.done
	}
}

// TierTriggers sets when r's tools on the interpreter start their
// compile: after calls calls (an interpreter time and an age past any
// test's length otherwise).
func TierTriggers(r *Runner, calls int64) {
	r.tier.afterCalls, r.tier.afterRun, r.tier.after = calls, time.Hour, time.Hour
}

// InterpModules is how many interpreter modules r holds.
func InterpModules(r *Runner) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.tier.compiled)
}

// Upgrading reports whether p's background compile has started.
func Upgrading(p any) bool {
	t, ok := p.(*tiered)
	return ok && t.started.Load()
}
