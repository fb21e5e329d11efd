package wasm

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The pools of reused instances share the runner's budget
// (Options.PoolMemoryBytes) by demand (docs/POOLS.md "Pools and the
// budget"):
//
//   - an instance is charged what it really holds: wazero's objects
//     (instanceOverhead) and the pages of its mapping its calls have
//     written (read from pagemap after each call; the pages it only
//     reads are the shared memfd's). Before its first call it is charged
//     the largest figure measured for the tool so far, or a first guess.
//     An instance in a heap buffer holds the whole snapshot and is
//     charged it;
//   - each pool wants two instances at first (made at Prepare, so the
//     first calls already find one ready while the other is restored),
//     one more each time a call finds none ready, up to PoolTarget; a
//     call that comes while the pool is making one waits for it (see
//     awaitMaking) rather than making its own;
//   - the first instances (before any call) only take budget that is
//     free: a tool being warmed never takes an instance from another,
//     so a budget too small for every tool keeps the tools warmed first;
//   - when the budget is spent, a pool that wants an instance takes one
//     from the pool with the least recent demand (calls per tick,
//     halved every tick), if that demand is lower than its own;
//   - a pool that served no call for two ticks (poolTick) gives back
//     one instance per tick, down to one; charges that grew past the
//     budget are shed from the pools with the least demand;
//   - a call that finds no ready instance, when its pool is saturated
//     (PoolTarget instances exist, or the budget refused another),
//     waits for the next instance a call gives back, for at most twice
//     the pool's mean time to make an instance (at least
//     minAdmissionWait); then, or at once when the pool is not
//     saturated, it takes the fresh-instance path. This is the
//     admission control that keeps concurrency above the core count
//     from turning into fresh instances and garbage (short calls give
//     their instance back well within the wait), while a slow tool (one
//     waiting on the network) still gets a fresh instance rather than
//     a queue.

// startTarget is how many instances a pool makes at Prepare.
const startTarget = 2

// instanceOverhead is the Go heap of one pooled instance beyond its
// memory: wazero's module instance (function table, globals, WASI
// state), about 161 KiB for a Go guest (BenchmarkFastPath/pool-memory),
// rounded up.
const instanceOverhead = 192 << 10

// parkGuess is the first guess of what a parked command instance holds
// beyond instanceOverhead (its image and written pages; park.go), until
// one has parked: about what a small Go command's holds.
const parkGuess = 2 << 20

// slotPool is the pool of ready instances of one reusable tool.
type slotPool struct {
	p      *prepared
	owner  *pools
	logger hclog.Logger
	image  *cowImage   // nil: instances' memories are heap buffers
	mode   restoreMode // how instances are reset

	ready chan *slot
	dirty chan *slot
	// held are instances given back while others were ready, waiting
	// to be restored (under mu); giveBack passes them on to dirty once
	// fewer are ready, a tick or take takes them sooner.
	held []*slot
	wake chan struct{}
	quit chan struct{}
	done chan struct{}
	// filled is closed when the pool's first fill has ended, with or
	// without an instance (Warm waits for it).
	filled chan struct{}
	// shut runs close once; a concurrent close (a tool unloaded while
	// its runner closes) returns when the first has ended.
	shut sync.Once

	mu     sync.Mutex
	live   int  // instances that exist (ready, in use or being restored)
	target int  // instances wanted now (1..PoolTarget; startTarget at first)
	capped bool // the budget refused the last instance wanted
	closed bool // close has begun
	failed bool // an instance could not be made: stop trying
	// unparked: the failure was a command that cannot be parked (its
	// calls take the plain path by nature, not after a failure).
	unparked  bool
	making    int    // instances being made now
	restoring int    // instances the pool's goroutine is restoring now
	fresh     int    // ready instances that never served a call
	estimate  uint64 // charge of a new instance
	score     uint64 // recent demand (see tick)
	idle      int    // ticks in a row without a call

	calls atomic.Uint64 // calls since the last tick
	// makeNs is the moving mean (1/8 weight per sample) of the time to
	// make an instance.
	makeNs atomic.Int64

	hits, misses, discards, waits atomic.Uint64
}

func (ps *pools) newSlotPool(p *prepared) *slotPool {
	sp := &slotPool{
		p:      p,
		owner:  ps,
		logger: p.logger,
		ready:  make(chan *slot, PoolTarget),
		dirty:  make(chan *slot, PoolTarget),
		wake:   make(chan struct{}, 1),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
		filled: make(chan struct{}),
		target: startTarget,
	}
	sp.mode = ps.restore
	switch {
	case p.command != nil:
		// Each parked instance has its own image (park.go); a first
		// guess of its charge until one has parked.
		sp.estimate = instanceOverhead + parkGuess
	case sp.mode == restoreCopy:
		sp.logger.Debug("pool: instances in heap buffers", "reason", "configured")
		sp.estimate = instanceOverhead + uint64(len(p.fast.memory))
	default:
		im, err := newCOWImage(p.fast.memory)
		if err != nil {
			sp.mode = restoreCopy
			sp.logger.Debug("pool: instances in heap buffers", "reason", err)
			sp.estimate = instanceOverhead + uint64(len(p.fast.memory))
			break
		}
		sp.image = im
		// A first guess until a call has run: an eighth of the snapshot
		// (a Go tool writes 3–10% of it per call).
		sp.estimate = instanceOverhead + uint64(len(p.fast.memory))/8
	}
	if !ps.add(sp) {
		sp.closed = true
		close(sp.done)
		close(sp.filled)
		sp.closeImage()
		return sp
	}
	go sp.run()
	return sp
}

func (sp *slotPool) run() {
	defer close(sp.done)
	sp.fill()
	close(sp.filled)
	for {
		select {
		case s := <-sp.dirty:
			sp.reset(s)
		case <-sp.wake:
		case <-sp.quit:
			return
		}
		sp.fill()
	}
}

// reset restores an instance a call gave back and makes it ready, or
// drops it when it cannot be restored.
func (sp *slotPool) reset(s *slot) {
	sp.mu.Lock()
	sp.restoring++
	sp.mu.Unlock()
	s = sp.restoreHere(s)
	sp.mu.Lock()
	sp.restoring--
	sp.mu.Unlock()
	if s != nil {
		sp.ready <- s // never blocks: at most PoolTarget instances exist
	}
}

// recharge charges s what it holds now (see the file comment).
func (sp *slotPool) recharge(s *slot) {
	held := instanceOverhead + uint64(s.private)*pageSize
	switch {
	case s.park != nil:
		held += uint64(s.park.image.stored) // its image's pages
	case sp.image == nil || s.mapping == nil:
		return
	}
	if held <= s.charge {
		return
	}
	sp.owner.charge(held - s.charge)
	s.charge = held
	sp.mu.Lock()
	sp.estimate = max(sp.estimate, held)
	sp.mu.Unlock()
}

// fill makes instances until the pool has what it wants or the budget
// refuses one.
func (sp *slotPool) fill() {
	for {
		sp.mu.Lock()
		full := sp.live >= sp.target || sp.closed || sp.failed
		cost, demand := sp.estimate, sp.demandLocked()
		if demand > 0 {
			// Called: it may take an instance from a pool called less
			// (or not at all). Before its first call it takes free
			// budget only.
			demand++
		}
		if !full {
			sp.making++
		}
		sp.mu.Unlock()
		if full {
			return
		}
		if !sp.owner.reserveFor(sp, cost, demand) {
			sp.mu.Lock()
			sp.making--
			sp.capped, sp.target = true, max(sp.live, 1)
			sp.mu.Unlock()
			return
		}
		t0 := time.Now()
		s, err := sp.make()
		movingMean(&sp.makeNs, time.Since(t0))
		sp.mu.Lock()
		sp.making--
		if err != nil || sp.closed {
			var np *errNotParkable
			sp.failed = sp.failed || err != nil
			sp.unparked = sp.unparked || errors.As(err, &np)
			sp.mu.Unlock()
			sp.owner.free(cost)
			if errors.As(err, &np) {
				sp.logger.Debug("pool: the command is not parked; its calls start it afresh", "reason", np.why)
			} else if err != nil {
				sp.logger.Warn("pool: cannot make an instance", "error", err)
			} else {
				sp.discard(s)
			}
			return
		}
		s.charge = cost
		sp.live++
		sp.fresh++
		sp.mu.Unlock()
		sp.ready <- s
	}
}

// make makes one instance: a parked command instance or a reactor's
// instance from the snapshot.
func (sp *slotPool) make() (*slot, error) {
	if sp.p.command != nil {
		return sp.p.newParkedSlot()
	}
	return sp.p.newSlot(sp.image)
}

// disable stops the pool from making instances (why says what every
// instance of the tool would do); the calls take the fresh-instance path
// once the instances it has are gone.
func (sp *slotPool) disable(why string) {
	sp.mu.Lock()
	was := sp.failed
	sp.failed = true
	sp.mu.Unlock()
	if !was {
		sp.logger.Debug("pool: stopped making instances", "reason", why)
	}
}

// demandLocked is the pool's recent demand: the decayed score and the
// calls of the current tick. sp.mu is held.
func (sp *slotPool) demandLocked() uint64 { return sp.score + sp.calls.Load() }

// want asks for one more instance (a call found none ready).
func (sp *slotPool) want() {
	sp.mu.Lock()
	if sp.target < PoolTarget && !sp.closed {
		sp.target++
	}
	sp.mu.Unlock()
	sp.signal()
}

// signal wakes the pool's goroutine (to make or restore instances).
func (sp *slotPool) signal() {
	select {
	case sp.wake <- struct{}{}:
	default:
	}
}

// take returns a ready instance; failing that, one waiting to be
// restored, restored here (far cheaper than a fresh instance); failing
// that, when the pool is saturated, the next instance a call gives back;
// or nil (the call takes the fresh-instance path).
func (sp *slotPool) take(ctx context.Context) *slot {
	sp.calls.Add(1)
	select {
	case s := <-sp.ready:
		if !s.used {
			if u := sp.takeUsed(ctx, s); u != nil {
				s = u
			}
		}
		sp.hits.Add(1)
		return sp.taken(s)
	default:
	}
	select {
	case s := <-sp.ready:
		sp.hits.Add(1)
		return sp.taken(s)
	case s := <-sp.dirty:
		sp.want() // the pool did not keep up: one more
		if s = sp.restoreHere(s); s != nil {
			sp.hits.Add(1)
			return s
		}
	default:
		if s := sp.popHeld(); s != nil {
			if s = sp.restoreHere(s); s != nil {
				sp.hits.Add(1)
				return s
			}
		}
	}
	if !sp.saturated() {
		if s := sp.awaitMaking(ctx); s != nil {
			sp.hits.Add(1)
			return s
		}
		sp.misses.Add(1)
		sp.want()
		return nil
	}
	sp.waits.Add(1)
	wait := time.NewTimer(max(2*time.Duration(sp.makeNs.Load()), minAdmissionWait))
	defer wait.Stop()
	select {
	case s := <-sp.ready:
		sp.hits.Add(1)
		return sp.taken(s)
	case s := <-sp.dirty:
		if s = sp.restoreHere(s); s != nil {
			sp.hits.Add(1)
			return s
		}
	case <-wait.C:
	case <-ctx.Done():
	case <-sp.quit:
	}
	sp.misses.Add(1)
	return nil
}

// takeUsed returns an instance that has served a call, restored,
// instead of fresh (a new one, taken from ready), which it puts back;
// nil when no used instance is ready or on its way back (given back, or
// being restored by the pool's goroutine). A new instance's first call
// is several times slower than the next (its memory's pages are faulted
// in, the runtime's call stack grows), so a call that would be the first
// on a new instance takes a used one instead, and the new one waits for
// a call that finds no used instance (two at once). A new host's early
// calls, one after another, then run as fast as its later ones.
func (sp *slotPool) takeUsed(ctx context.Context, fresh *slot) *slot {
	for range len(sp.ready) {
		select {
		case u := <-sp.ready:
			if u.used {
				sp.ready <- fresh // never blocks: fresh came from it
				return u
			}
			sp.ready <- u
		default:
		}
	}
	var u *slot
	select {
	case u = <-sp.dirty:
	default:
		u = sp.popHeld()
	}
	if u != nil {
		if u = sp.restoreHere(u); u != nil {
			sp.ready <- fresh
		}
		return u
	}
	sp.mu.Lock()
	restoring := sp.restoring > 0
	sp.mu.Unlock()
	if !restoring {
		return nil
	}
	t := time.NewTimer(usedWait)
	defer t.Stop()
	select {
	case u := <-sp.ready:
		if u.used {
			sp.ready <- fresh
			return u
		}
		sp.ready <- u
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// taken marks s as handed to a call.
func (sp *slotPool) taken(s *slot) *slot {
	if s != nil && !s.used {
		s.used = true
		sp.mu.Lock()
		sp.fresh--
		sp.mu.Unlock()
	}
	return s
}

// youngCalls is how many calls a pool serves before an instance given
// back while only new ones are ready goes to the pool's goroutine like
// any other: holding it for the next call makes that call restore it,
// which a new host's first calls gain by (they would otherwise often
// take a new instance) and later calls one after another would pay for
// at every call.
const youngCalls = 8

// usedWait bounds takeUsed's wait for the instance the pool's goroutine
// is restoring (a restore takes tens of microseconds): longer, and the
// wait would cost more than a new instance's first call.
const usedWait = 300 * time.Microsecond

// awaitMaking waits for the instance the pool is making, when it is
// making one: a fresh instance would cost the call about as much as the
// rest of that wait, and it is not reused afterwards. Until the pool's
// first fill has ended (a new tool's first calls) the wait ends with the
// fill, which runs no guest code for a reactor and is bounded by the
// tool's timeout for a command; later it is bounded by twice the mean
// time to make an instance. nil: nothing is being made, or the wait
// ended without an instance.
func (sp *slotPool) awaitMaking(ctx context.Context) *slot {
	var first <-chan struct{}
	select {
	case <-sp.filled:
	default:
		first = sp.filled
	}
	sp.mu.Lock()
	making := sp.making > 0 && !sp.closed
	sp.mu.Unlock()
	if first == nil && !making {
		return nil
	}
	var timeout <-chan time.Time
	if first == nil {
		t := time.NewTimer(max(2*time.Duration(sp.makeNs.Load()), minAdmissionWait))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case s := <-sp.ready:
		return sp.taken(s)
	case s := <-sp.dirty:
		return sp.restoreHere(s)
	case <-first:
		select {
		case s := <-sp.ready:
			return sp.taken(s)
		default:
		}
	case <-timeout:
	case <-ctx.Done():
	case <-sp.quit:
	}
	return nil
}

// WarmState is what a tool's pool holds once its first instances have
// been made (see Warm).
type WarmState int

const (
	// WarmNone: the tool has no pool (its instances cannot be reused,
	// it is deterministic, it is a command that cannot be parked, or the
	// pool budget is 0); every call makes its own instance.
	WarmNone WarmState = iota
	// WarmReady: at least one instance is ready for a call.
	WarmReady
	// WarmNoBudget: the pool budget was spent by the tools warmed before
	// it; the tool's calls make their own instances until its demand
	// earns it a share (docs/POOLS.md, "Sharing by demand").
	WarmNoBudget
	// WarmFailed: making an instance failed (logged once); the tool's
	// calls make their own instances.
	WarmFailed
)

// String returns the state's name as /metrics and /readyz show it.
func (s WarmState) String() string {
	switch s {
	case WarmReady:
		return "ready"
	case WarmNoBudget:
		return "no-budget"
	case WarmFailed:
		return "failed"
	}
	return "none"
}

// warm waits for the pool's first fill, or for ctx, and reports what it
// holds then.
func (sp *slotPool) warm(ctx context.Context) WarmState {
	select {
	case <-sp.filled:
	case <-ctx.Done():
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	switch {
	case sp.live > 0:
		return WarmReady
	case sp.unparked || sp.closed:
		return WarmNone
	case sp.failed:
		return WarmFailed
	case sp.capped:
		return WarmNoBudget
	}
	return WarmNone
}

// restoreHere restores an instance on the calling goroutine (the pool's
// or a call's) and charges what it holds; nil when it could not be
// restored (it is dropped).
func (sp *slotPool) restoreHere(s *slot) *slot {
	if err := sp.restore(s); err != nil {
		sp.logger.Warn("pool: restore failed", "error", err)
		sp.drop(s)
		return nil
	}
	sp.recharge(s)
	return s
}

// minAdmissionWait is the shortest a call waits for a busy pool's
// instance before it takes the fresh-instance path.
const minAdmissionWait = time.Millisecond

// saturated reports whether a call that found no instance should wait
// for one (see the file comment).
func (sp *slotPool) saturated() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return !sp.closed && sp.live > 0 && (sp.live >= PoolTarget || sp.capped)
}

// popHeld takes one held instance, or nil.
func (sp *slotPool) popHeld() *slot {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	n := len(sp.held)
	if n == 0 {
		return nil
	}
	s := sp.held[n-1]
	sp.held = sp.held[:n-1]
	return s
}

// takeHeld takes every held instance.
func (sp *slotPool) takeHeld() []*slot {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	held := sp.held
	sp.held = nil
	return held
}

// flushHeld passes the held instances on to be restored.
func (sp *slotPool) flushHeld() {
	for _, h := range sp.takeHeld() {
		sp.dirty <- h
	}
}

// movingMean folds d into the moving mean m (weight 1/8; the first
// sample sets it).
func movingMean(m *atomic.Int64, d time.Duration) {
	for {
		old := m.Load()
		next := int64(d)
		if old != 0 {
			next = old + (int64(d)-old)/8
		}
		if m.CompareAndSwap(old, next) {
			return
		}
	}
}

// giveBack returns an instance after its call: to be restored if reuse,
// else discarded and replaced.
func (sp *slotPool) giveBack(s *slot, reuse bool) {
	sp.mu.Lock()
	closed := sp.closed
	if !reuse || closed {
		sp.live--
	}
	young := sp.hits.Load()+sp.misses.Load() <= youngCalls
	if ready := len(sp.ready); reuse && !closed && (ready >= 2 || young && ready > 0 && sp.fresh >= ready) {
		// Others are ready: restore this one later, without waking
		// the pool's goroutine for it now. Also, in a young pool,
		// when only new instances are ready: the next call takes
		// this one and restores it (takeUsed), rather than racing
		// the pool's goroutine for it.
		sp.held = append(sp.held, s)
		sp.mu.Unlock()
		return
	}
	var held []*slot
	if reuse && !closed {
		held, sp.held = sp.held, nil
	}
	sp.mu.Unlock()
	if reuse && !closed {
		for _, h := range held {
			sp.dirty <- h
		}
		sp.dirty <- s // never blocks: at most PoolTarget instances exist
		return
	}
	sp.discards.Add(1)
	sp.discard(s)
	sp.owner.free(s.charge)
	sp.signal()
}

// drop discards an instance the pool holds (not in use) and frees its
// budget.
func (sp *slotPool) drop(s *slot) {
	sp.mu.Lock()
	sp.live--
	sp.mu.Unlock()
	sp.discards.Add(1)
	sp.discard(s)
	sp.owner.free(s.charge)
}

// shed gives back one ready instance's budget, lowering the pool's
// target, and reports whether there was one. keepLast keeps the pool's
// only instance.
func (sp *slotPool) shed(keepLast bool) bool {
	sp.mu.Lock()
	if sp.closed || (keepLast && sp.live <= 1) {
		sp.mu.Unlock()
		return false
	}
	sp.mu.Unlock()
	select {
	case s := <-sp.ready:
		sp.mu.Lock()
		sp.live--
		sp.target = max(min(sp.target, sp.live), 1)
		if !s.used {
			sp.fresh--
		}
		sp.mu.Unlock()
		sp.discard(s)
		sp.owner.free(s.charge)
		return true
	default:
		return false
	}
}

// tick is the pool's part of the runner's periodic rebalance: it folds
// this tick's calls into the demand and, after two ticks without a call,
// gives back one instance (down to one).
func (sp *slotPool) tick() {
	sp.flushHeld()
	n := sp.calls.Swap(0)
	sp.mu.Lock()
	sp.score = sp.score/2 + n
	if n > 0 {
		sp.idle = 0
		sp.capped = false // try to grow again on the next miss
		sp.mu.Unlock()
		return
	}
	sp.idle++
	shrink := sp.idle >= 2 && sp.target > 1
	if shrink {
		sp.target--
	}
	sp.mu.Unlock()
	if shrink {
		sp.shed(true)
	}
}

// demand is the pool's recent demand (see demandLocked).
func (sp *slotPool) demand() uint64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.demandLocked()
}

// closeImage releases the memfd; live mappings stay valid.
func (sp *slotPool) closeImage() {
	if sp.image != nil {
		_ = sp.image.close()
	}
}

// discard closes an instance and its mounts, and unmaps its memory.
func (sp *slotPool) discard(s *slot) {
	// A parked instance's goroutine ends first, then the module is
	// closed, then its memory (its mapping included) is unmapped.
	if s.park != nil {
		s.park.stop()
	}
	sp.p.closeModule(s.mod)
	if s.park != nil {
		s.park.release()
		s.mapping = nil
	}
	s.roots.release()
	for _, fs := range s.mounts.fss {
		_ = fs.Close()
	}
	if s.mapping != nil {
		_ = sp.image.unmap(s.mapping)
		s.mapping = nil
	}
}

// close stops the pool and closes every idle instance; instances in use
// are closed when their call gives them back. Idempotent: every call
// returns once the pool's goroutine has ended and its instances are
// closed.
func (sp *slotPool) close() { sp.shut.Do(sp.closeNow) }

func (sp *slotPool) closeNow() {
	if !closeOnce(&sp.mu, &sp.closed) {
		return
	}
	close(sp.quit)
	<-sp.done
	for _, h := range sp.takeHeld() {
		sp.drop(h)
	}
	for {
		var s *slot
		select {
		case s = <-sp.ready:
		case s = <-sp.dirty:
		default:
		}
		if s == nil {
			break
		}
		sp.drop(s)
	}
	sp.closeImage()
	sp.owner.remove(sp)
}

// stats returns how many calls found an instance, how many did not and
// how many instances were discarded.
func (sp *slotPool) stats() (hits, misses, discards uint64) {
	return sp.hits.Load(), sp.misses.Load(), sp.discards.Load()
}
