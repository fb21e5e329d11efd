package wasm

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero/experimental"
)

// PoolTarget is the number of instances (or ready memories) a fast-path
// tool's pool keeps at most; fewer when demand is low or the runner's
// pool budget is spent.
const PoolTarget = 4

// poolTick is how often the runner rebalances its pools (slotpool.go).
const poolTick = time.Second

// memorySource hands out linear memories holding a tool's snapshot: a
// buffer whose length is the snapshot's size and whose every byte equals
// the snapshot.
type memorySource interface {
	get() []byte
	// put takes back a buffer get returned, once its call is over.
	put(buf []byte)
}

// mappedSource hands out private mappings of a tool's cowImage: a fresh
// instance's memory then costs no Go heap (a Go tool's snapshot is 4 MiB
// or more, copied per call before), and the kernel copies only the pages
// the call writes. When no mapping can be made (the image is closed, or
// outside Linux) get copies the snapshot instead.
type mappedSource struct {
	image *cowImage
	copy  prefixSource

	mu     sync.Mutex
	mapped map[*byte]struct{} // data pointers of the mappings handed out
}

func newMappedSource(image *cowImage, snap []byte) *mappedSource {
	return &mappedSource{image: image, copy: constantSource(snap), mapped: map[*byte]struct{}{}}
}

func (s *mappedSource) get() []byte {
	if s.image != nil {
		if b, err := s.image.mapping(); err == nil {
			s.mu.Lock()
			s.mapped[unsafe.SliceData(b)] = struct{}{}
			s.mu.Unlock()
			return b
		}
	}
	return s.copy.get()
}

// close releases the image; the mappings handed out stay valid until put.
func (s *mappedSource) close() {
	if s.image != nil {
		_ = s.image.close()
	}
}

// put unmaps a mapping get handed out (a copy is left to the collector).
func (s *mappedSource) put(b []byte) {
	if len(b) == 0 {
		return
	}
	s.mu.Lock()
	_, ok := s.mapped[unsafe.SliceData(b)]
	delete(s.mapped, unsafe.SliceData(b))
	s.mu.Unlock()
	if ok {
		_ = s.image.unmap(b[:s.copy.size:s.copy.size])
	}
}

// constantSource copies image per get; put drops the buffer.
func constantSource(image []byte) prefixSource { return prefixSource{prefix: image, size: len(image)} }

// prefixSource hands out buffers of size bytes that start with prefix and
// are zero after it; put drops the buffer.
type prefixSource struct {
	prefix []byte
	size   int
}

func (s prefixSource) get() []byte {
	b := make([]byte, s.size)
	copy(b, s.prefix)
	return b
}

func (s prefixSource) put([]byte) {}

// pools is the runner-wide memory budget shared by every tool's pool
// (policy pool.memoryMb) and the set of live pools, drained on Close.
type pools struct {
	budget uint64
	// restore is how pooled instances are reset (restoreDiff unless a
	// test sets another, for comparison).
	restore restoreMode

	mu     sync.Mutex
	used   uint64
	live   map[*memoryPool]struct{}
	slots  map[*slotPool]struct{}
	closed bool
	// stop ends the rebalance goroutine, started with the first pool of
	// reused instances; nil before.
	stop chan struct{}
	// gate admits calls on pooled instances (admit.go).
	gate gate
}

func newPools(budget uint64) *pools {
	return &pools{budget: budget, restore: restoreDiff, live: map[*memoryPool]struct{}{}, slots: map[*slotPool]struct{}{}, gate: newGate()}
}

// reserve takes n bytes of the budget and reports whether they were
// available.
func (ps *pools) reserve(n uint64) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed || ps.used+n > ps.budget {
		return false
	}
	ps.used += n
	return true
}

func (ps *pools) free(n uint64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.used -= n
}

// closeOnce sets *closed under mu and reports whether this call was the
// one that did (a pool's close is idempotent).
func closeOnce(mu *sync.Mutex, closed *bool) bool {
	mu.Lock()
	defer mu.Unlock()
	if *closed {
		return false
	}
	*closed = true
	return true
}

// charge adds n bytes an instance came to hold to the budget in use; it
// may exceed the budget until the next rebalance sheds instances.
func (ps *pools) charge(n uint64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.used += n
}

// add registers a pool of reused instances, starting the rebalance
// goroutine with the first; false once the runner is closed.
func (ps *pools) add(sp *slotPool) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return false
	}
	ps.slots[sp] = struct{}{}
	if ps.stop == nil {
		ps.stop = make(chan struct{})
		go ps.rebalanceEvery(poolTick, ps.stop)
	}
	return true
}

// remove forgets a closed pool of reused instances.
func (ps *pools) remove(sp *slotPool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	delete(ps.slots, sp)
}

// slotPools returns the live pools of reused instances.
func (ps *pools) slotPools() []*slotPool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]*slotPool, 0, len(ps.slots))
	for sp := range ps.slots {
		out = append(out, sp)
	}
	return out
}

// reserveFor takes n bytes for a new instance of sp, whose demand is
// given; when the budget is spent it takes them from the pool with the
// least demand below it, one ready instance at a time.
func (ps *pools) reserveFor(sp *slotPool, n, demand uint64) bool {
	for range 2 * PoolTarget {
		if ps.reserve(n) {
			return true
		}
		victim := ps.leastDemand(sp, demand)
		if victim == nil || !victim.shed(victim.demand() > 0) {
			return false
		}
	}
	return false
}

// leastDemand returns the pool other than not with a ready instance and
// the least demand below limit, or nil.
func (ps *pools) leastDemand(not *slotPool, limit uint64) *slotPool {
	var best *slotPool
	for _, q := range ps.slotPools() {
		if q == not || len(q.ready) == 0 {
			continue
		}
		if d := q.demand(); d < limit {
			best, limit = q, d
		}
	}
	return best
}

// rebalance is the periodic step of the pools' sharing: each pool folds
// in its demand and shrinks when idle; then, while the charges exceed
// the budget, the pools with the least demand give instances back.
func (ps *pools) rebalance() {
	for _, sp := range ps.slotPools() {
		sp.tick()
	}
	for ps.inUse() > ps.budget {
		victim := ps.leastDemand(nil, ^uint64(0))
		if victim == nil || !victim.shed(false) {
			return
		}
	}
}

// rebalanceEvery runs rebalance every d until stop is closed.
func (ps *pools) rebalanceEvery(d time.Duration, stop chan struct{}) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			ps.rebalance()
		case <-stop:
			return
		}
	}
}

// Used returns the bytes the pools hold now.
func (ps *pools) inUse() uint64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.used
}

// newPool starts the pool of one fast-path tool: a goroutine fills up to
// PoolTarget buffers with snap (as far as the budget allows) and refills
// each buffer a call gives back. A pool with no buffer (budget spent or
// zero) still works: every get maps (or copies) the snapshot on the spot.
func (ps *pools) newPool(snap []byte, logger hclog.Logger) *memoryPool {
	image, _ := newCOWImage(snap) // nil: copies instead of mappings
	mp := &memoryPool{
		snap:   snap,
		extra:  newMappedSource(image, snap),
		owner:  ps,
		logger: logger,
		owned:  map[*byte]struct{}{},
		ready:  make(chan []byte, PoolTarget),
		dirty:  make(chan []byte, PoolTarget),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		close(mp.done)
		mp.closed = true
		mp.extra.close()
		return mp
	}
	ps.live[mp] = struct{}{}
	ps.mu.Unlock()
	go mp.run()
	return mp
}

// closeAll drains every live pool; later pools start closed.
func (ps *pools) closeAll() {
	ps.mu.Lock()
	if ps.stop != nil && !ps.closed {
		close(ps.stop)
	}
	ps.closed = true
	live := make([]*memoryPool, 0, len(ps.live))
	for mp := range ps.live {
		live = append(live, mp)
	}
	slots := make([]*slotPool, 0, len(ps.slots))
	for sp := range ps.slots {
		slots = append(slots, sp)
	}
	ps.mu.Unlock()
	for _, mp := range live {
		mp.close()
	}
	for _, sp := range slots {
		sp.close()
	}
}

// memoryPool is the bounded pool of ready snapshot memories of one
// fast-path tool. Buffers it owns (reserved from the budget) circulate
// ready → call → dirty → refilled → ready; a call that finds no ready
// buffer gets a mapping of the snapshot (extra), released afterwards.
type memoryPool struct {
	snap []byte
	// extra hands out the memories of calls that find no ready buffer:
	// mappings of the snapshot rather than copies (copies outside Linux).
	extra  *mappedSource
	owner  *pools
	logger hclog.Logger

	mu     sync.Mutex
	owned  map[*byte]struct{} // data pointers of the buffers it owns
	closed bool

	ready chan []byte
	dirty chan []byte
	quit  chan struct{}
	done  chan struct{}
	// shut runs close once; a concurrent close returns when the first
	// has ended.
	shut sync.Once

	hits, misses atomic.Uint64
}

// run fills the pool, then refills returned buffers until close.
func (mp *memoryPool) run() {
	defer close(mp.done)
	size := uint64(len(mp.snap))
	for range PoolTarget {
		if size == 0 || !mp.owner.reserve(size) {
			break
		}
		buf := append(make([]byte, 0, len(mp.snap)), mp.snap...)
		mp.mu.Lock()
		mp.owned[unsafe.SliceData(buf)] = struct{}{}
		mp.mu.Unlock()
		select {
		case mp.ready <- buf:
		case <-mp.quit:
			return
		}
	}
	for {
		select {
		case buf := <-mp.dirty:
			copy(buf, mp.snap)
			select {
			case mp.ready <- buf:
			case <-mp.quit:
				return
			}
		case <-mp.quit:
			return
		}
	}
}

// get returns a buffer holding the snapshot: a ready one, or a new copy.
func (mp *memoryPool) get() []byte {
	select {
	case buf := <-mp.ready:
		mp.hits.Add(1)
		return buf
	default:
		mp.misses.Add(1)
		return mp.extra.get()
	}
}

// put gives a buffer back after its call. A buffer the pool owns is
// refilled; any other is dropped. The dirty channel has room for every
// owned buffer, so put never blocks.
func (mp *memoryPool) put(buf []byte) {
	if cap(buf) != len(mp.snap) {
		return
	}
	mp.mu.Lock()
	_, own := mp.owned[unsafe.SliceData(buf)]
	closed := mp.closed
	mp.mu.Unlock()
	if !own {
		mp.extra.put(buf)
		return
	}
	if closed {
		return
	}
	select {
	case mp.dirty <- buf[:len(mp.snap)]:
	default:
		mp.logger.Warn("pool: dirty queue full; dropping a buffer")
	}
}

// stats returns how many gets found a ready buffer and how many copied.
func (mp *memoryPool) stats() (hits, misses uint64) {
	return mp.hits.Load(), mp.misses.Load()
}

// close stops the refill goroutine, drops every buffer and gives the
// budget back. It is idempotent, and every call returns once the refill
// goroutine has ended; calls still running finish with their buffer,
// which put then drops.
func (mp *memoryPool) close() { mp.shut.Do(mp.closeNow) }

func (mp *memoryPool) closeNow() {
	if !closeOnce(&mp.mu, &mp.closed) {
		return
	}
	close(mp.quit)
	<-mp.done
	for {
		select {
		case <-mp.ready:
			continue
		case <-mp.dirty:
			continue
		default:
		}
		break
	}
	mp.mu.Lock()
	n := uint64(len(mp.owned)) * uint64(len(mp.snap))
	mp.owned = map[*byte]struct{}{}
	mp.mu.Unlock()
	mp.owner.free(n)
	mp.owner.mu.Lock()
	delete(mp.owner.live, mp)
	mp.owner.mu.Unlock()
	mp.extra.close()
}

// snapshotAllocator is the memory allocator of a fast-path instance: its
// linear memory starts as a buffer from the tool's pool, under the call's
// memory cap.
type snapshotAllocator struct {
	cap  *memoryCap
	pool memorySource
}

// Allocate implements experimental.MemoryAllocator.
func (a *snapshotAllocator) Allocate(_, max uint64) experimental.LinearMemory {
	return &snapshotMemory{cap: a.cap, pool: a.pool, max: max}
}

// snapshotMemory is one fast-path linear memory. Its first allocation is
// the snapshot (wazero sizes the memory by the returned buffer, so the
// instance starts at the snapshot's size, not the module's minimum). A
// grow past the snapshot moves the memory to a new buffer that is never
// pooled; the snapshot buffer goes back to the pool when the instance is
// closed and is overwritten with the snapshot before its next use.
type snapshotMemory struct {
	cap  *memoryCap
	pool memorySource
	max  uint64
	orig []byte // the buffer from the pool
	buf  []byte
}

// Reallocate implements experimental.LinearMemory.
func (m *snapshotMemory) Reallocate(size uint64) []byte {
	if m.buf == nil {
		m.orig = m.pool.get()
		want := max(size, uint64(len(m.orig)))
		if !m.cap.grow(want) && m.cap.tooSmall != nil {
			// The snapshot is above the call's cap: stop the call
			// before the guest runs, as for a command whose initial
			// memory is.
			m.cap.tooSmall()
		}
		m.buf = m.orig
		if size <= uint64(len(m.buf)) {
			return m.buf
		}
	}
	if size <= uint64(len(m.buf)) {
		return m.buf[:size]
	}
	if !m.cap.grow(size) {
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	newCap := size + size/4
	newCap = min(newCap, max(m.cap.limit, size))
	if m.max > 0 {
		newCap = min(newCap, max(m.max, size))
	}
	buf := make([]byte, size, newCap)
	copy(buf, m.buf)
	m.buf = buf
	return buf
}

// Free implements experimental.LinearMemory: the snapshot buffer goes
// back to the pool.
func (m *snapshotMemory) Free() {
	if m.orig != nil {
		m.pool.put(m.orig)
	}
	m.orig, m.buf = nil, nil
}

// Interface guards
var (
	_ experimental.MemoryAllocator = (*snapshotAllocator)(nil)
	_ experimental.LinearMemory    = (*snapshotMemory)(nil)
	_ memorySource                 = (*memoryPool)(nil)
	_ memorySource                 = prefixSource{}
	_ memorySource                 = (*mappedSource)(nil)
)
