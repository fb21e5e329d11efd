package wasm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agenthost/agenthost/host/internal/limitio"
	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/agenthost/agenthost/host/internal/sandboxfs"
	"github.com/agenthost/agenthost/host/runner"
)

// Reused instances (docs/POOLS.md). A fresh instance of a Go module costs
// mostly wazero building its function table (one reference per element)
// and its memory; reusing an instance skips both. An instance is put back
// only when the call left nothing behind that a reset cannot undo:
//
//   - memory and mutable globals: restored from the snapshot in the
//     background before the instance is handed out again; a memory that
//     grew is never restored (the instance is discarded);
//   - tables: only modules that cannot change a table are reused
//     (tablescan.go);
//   - WASI state: the instance's stdio and sleep are switched per call,
//     its mounts are reopened per call (a new /tmp) and closed after; a
//     call must close every file it opened (counted through the mounts)
//     and leave stdio and every preopened mount open (the fd check);
//   - the call must have returned: a trap, exit, timeout or output or
//     memory limit discards the instance.
//
// Deterministic tools are not reused (their clock and random stream are
// per instance); they run from the snapshot in a fresh instance.

// slot is one pooled instance.
type slot struct {
	// mapping is the instance's private mapping of the pool's cowImage,
	// nil when the memory is a plain copy.
	mapping []byte
	// pagemap is the scratch buffer of cowImage.written.
	pagemap []byte
	mod     api.Module
	mem     *snapshotMemory
	io      *slotIO
	mounts  *mountSet
	fds     *fdCount
	roots   *rootDirs
	globals []api.MutableGlobal
	call    api.Function
	check   api.Function
	// park is the goroutine and snapshot of a command's instance
	// (park.go); nil for a reactor's, whose memory is mem.
	park *parked
	// charge is what the pool's budget holds for the instance; private
	// is how many pages of its mapping its calls have written (counted
	// at each restore).
	charge  uint64
	private int
	// used: the instance has served a call (slotPool.takeUsed).
	used bool
}

// slotIO is what a pooled instance's stdio and sleep reach: the current
// call's buffers, switched per call. The fields are set before the guest
// runs and cleared after; the handoff through the pool's channels orders
// those writes with the guest's reads.
type slotIO struct {
	in     io.Reader
	out    io.Writer
	errOut io.Writer
	sleep  sys.Nanosleep
	// stray counts the bytes written while no call was attached (by a
	// command's start-up).
	stray atomic.Int64
	// rec records the clocks and random bytes of the call (or start-up)
	// the instance runs (record.go).
	rec *recorder
}

// Read implements io.Reader (the guest's stdin).
func (s *slotIO) Read(p []byte) (int, error) {
	if s.in == nil {
		return 0, io.EOF
	}
	return s.in.Read(p)
}

func (s *slotIO) nanosleep(ns int64) {
	if s.sleep != nil {
		s.sleep(ns)
	}
}

// slotWriter is a pooled instance's stdout or stderr.
type slotWriter struct {
	io     *slotIO
	stderr bool
}

// Write implements io.Writer.
func (w slotWriter) Write(p []byte) (int, error) {
	dst := w.io.out
	if w.stderr {
		dst = w.io.errOut
	}
	if dst == nil {
		w.io.stray.Add(int64(len(p)))
		return len(p), nil
	}
	return dst.Write(p)
}

// fdCount counts the files a call opened and closed through its mounts.
type fdCount struct{ opened, closed atomic.Int64 }

func (n *fdCount) reset()         { n.opened.Store(0); n.closed.Store(0) }
func (n *fdCount) balanced() bool { return n.opened.Load() == n.closed.Load() }
func (n *fdCount) String() string {
	return fmt.Sprintf("%d opened, %d closed", n.opened.Load(), n.closed.Load())
}

// countingFS is a mount of a pooled instance: the mount's file system,
// counting every file it opens and each close. Its root directory is
// opened as a rootDir instead (rootdir.go), not counted.
type countingFS struct {
	experimentalsys.FS
	n     *fdCount
	roots *rootDirs
}

// OpenFile implements experimentalsys.FS.
func (c *countingFS) OpenFile(path string, flag experimentalsys.Oflag, perm iofs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if path == "." {
		// A failed open returns a nil interface, not a nil *rootDir:
		// wazero keeps what it gets and would close it.
		d, errno := openRootDir(c.FS, flag, perm, c.roots)
		if errno != 0 {
			return nil, errno
		}
		return d, 0
	}
	f, errno := c.FS.OpenFile(path, flag, perm)
	if errno != 0 {
		return f, errno
	}
	c.n.opened.Add(1)
	return &countingFile{File: f, n: c.n}, 0
}

// countingFile counts its first close.
type countingFile struct {
	experimentalsys.File
	n      *fdCount
	closed bool
}

// Close implements experimentalsys.File.
func (f *countingFile) Close() experimentalsys.Errno {
	if !f.closed {
		f.closed = true
		f.n.closed.Add(1)
	}
	return f.File.Close()
}

// slotMounts builds a pooled instance's mounts: a mount set owned by the
// instance (reopened per call, closed after it) whose file systems count
// opens and closes.
func (p *prepared) slotMounts(n *fdCount, roots *rootDirs) (*mountSet, wazero.FSConfig, error) {
	ms := &mountSet{denials: sandboxfs.NewDenials(nil)}
	for _, m := range p.mounts {
		cfg := m.cfg
		cfg.Checker, cfg.Denials = p.checker, ms.denials
		fs, err := sandboxfs.New(cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("mount %s: %w", cfg.GuestPath, err)
		}
		ms.fss = append(ms.fss, fs)
	}
	ms.fsc = ms.wrapped(func(fs experimentalsys.FS) experimentalsys.FS { return &countingFS{FS: fs, n: n, roots: roots} })
	return ms, ms.fsc, nil
}

// wrapped is the set's file systems as the guest sees them (a deny-all
// "/" recording its refusals, then each mount at its guest path), each
// seen through wrap.
func (ms *mountSet) wrapped(wrap func(experimentalsys.FS) experimentalsys.FS) wazero.FSConfig {
	fsc := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(wrap(sandboxfs.NewDeny(ms.denials)), "/")
	for _, fs := range ms.fss {
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(wrap(fs), fs.GuestPath())
	}
	return fsc
}

// slotAllocator gives a new instance the snapshot memory and remembers
// it, so the pool can restore and re-cap it.
type slotAllocator struct {
	snapshotAllocator
	mem *snapshotMemory
}

// Allocate implements experimental.MemoryAllocator.
func (a *slotAllocator) Allocate(capHint, max uint64) experimental.LinearMemory {
	a.mem = a.snapshotAllocator.Allocate(capHint, max).(*snapshotMemory)
	return a.mem
}

// fixedSource hands out one given buffer.
type fixedSource []byte

func (s fixedSource) get() []byte { return s }
func (s fixedSource) put([]byte)  {}

// slotBase makes a pooled instance's parts that do not depend on its kind
// (its stdio switch, file counts, mounts) and its module config, whose
// stdio, file systems and sleep reach the current call's through them.
func (p *prepared) slotBase() (*slot, wazero.ModuleConfig, error) {
	s := &slot{io: &slotIO{}, fds: &fdCount{}, roots: &rootDirs{open: map[*rootDir]struct{}{}}}
	ms, fsc, err := p.slotMounts(s.fds, s.roots)
	if err != nil {
		return nil, nil, err
	}
	s.mounts = ms
	cfg := p.base.
		WithStdin(s.io).
		WithStdout(slotWriter{io: s.io}).
		WithStderr(slotWriter{io: s.io, stderr: true}).
		WithFSConfig(fsc).
		WithNanosleep(s.io.nanosleep)
	return s, s.io.config(cfg), nil
}

// newSlot instantiates one instance from the snapshot, its memory a
// private mapping of image when there is one.
func (p *prepared) newSlot(image *cowImage) (*slot, error) {
	fp := p.fast
	s, cfg, err := p.slotBase()
	if err != nil {
		return nil, err
	}
	var source memorySource = constantSource(fp.memory)
	if image != nil {
		if s.mapping, err = image.mapping(); err != nil {
			return nil, err
		}
		source = fixedSource(s.mapping)
	}
	// Instantiation itself is not a call: the cap here only has to admit
	// the snapshot; each call re-caps the memory with its own limit.
	limit := max(p.limits.MemoryBytes, uint64(len(fp.memory)))
	alloc := &slotAllocator{snapshotAllocator: snapshotAllocator{cap: &memoryCap{limit: limit}, pool: source}}
	mod, err := p.rt.InstantiateModule(experimental.WithMemoryAllocator(context.Background(), alloc), p.compiled, cfg)
	if err != nil {
		if s.mapping != nil {
			_ = image.unmap(s.mapping)
		}
		return nil, err
	}
	s.mod, s.mem = mod, alloc.mem
	if s.globals, err = mutableGlobals(mod, fp.globals); err != nil {
		p.closeModule(mod)
		if s.mapping != nil {
			_ = image.unmap(s.mapping)
		}
		return nil, err
	}
	setGlobals(s.globals, fp.values)
	s.call, s.check = mod.ExportedFunction(exportCall), mod.ExportedFunction(exportFdCheck)
	if s.call == nil || s.check == nil || s.mem == nil {
		p.closeModule(mod)
		if s.mapping != nil {
			_ = image.unmap(s.mapping)
		}
		return nil, fmt.Errorf("instance lacks %s or %s", exportCall, exportFdCheck)
	}
	return s, nil
}

// setCap puts the instance's memory under a call's cap.
func (s *slot) setCap(m *memoryCap) {
	if s.park != nil {
		s.park.mem.cap = m
	} else {
		s.mem.cap = m
	}
}

// run runs one call on the instance (its stdio already the call's):
// agenthost_call for a reactor's, a resume for a parked command's.
// returned is false when the guest did not return to the host (a trap,
// proc_exit, a stopped call, a command returning from _start).
func (s *slot) run(ctx context.Context) (returned bool, err error) {
	if s.park != nil {
		return s.park.call(ctx)
	}
	return callExport(ctx, s.call)
}

// snapshotSize is the size of the instance's memory at its snapshot.
func (p *prepared) snapshotSize(s *slot) int {
	if s.park != nil {
		return s.park.size
	}
	return len(p.fast.memory)
}

// restoreMode is how a pooled instance's memory is reset after a call.
type restoreMode int

const (
	// restoreDiff (the default) compares the memory with the snapshot
	// page by page and copies back only the pages that differ. The
	// memory is a private mapping of the pool's cowImage where there is
	// one: pages no call ever wrote stay shared, pages a call wrote stay
	// resident, so the next call writes them without a page fault.
	restoreDiff restoreMode = iota
	// restoreDrop drops every page of the private mapping
	// (madvise(MADV_DONTNEED)); the next call faults each page it
	// touches in again. Kept for comparison in benchmarks.
	restoreDrop
	// restoreCopy uses a plain heap buffer, restored like restoreDiff.
	restoreCopy
)

// pageSize is the granularity of restoreDiff (and WebAssembly's pages
// are multiples of it).
const pageSize = 4096

// cacheLine is the granularity at which restoreDirty writes.
const cacheLine = 64

// restoreDirty copies back from snap every byte of mem that differs from
// it, among the pages for which maybe reports true, and returns how many
// pages differed and for how many maybe reported true. mem and snap have
// the same length.
func restoreDirty(mem, snap []byte, maybe func(page int) bool) (n, maybes int) {
	for off := 0; off < len(snap); off += pageSize {
		if !maybe(off / pageSize) {
			continue
		}
		maybes++
		end := min(off+pageSize, len(snap))
		if bytes.Equal(mem[off:end], snap[off:end]) {
			continue
		}
		// Within a page, rewrite only the cache lines that differ: a
		// call changes few of them (about 300 lines in 60 pages for
		// the Go echo tool), and every line written here is one the
		// next call's core must fetch again.
		for l := off; l < end; l += cacheLine {
			e := min(l+cacheLine, end)
			if !bytes.Equal(mem[l:e], snap[l:e]) {
				copy(mem[l:e], snap[l:e])
			}
		}
		n++
	}
	return n, maybes
}

// everyPage is restoreDirty's filter for a memory without a mapping.
func everyPage(int) bool { return true }

// restore puts a returned instance back into the snapshot's state: the
// whole memory (see restoreMode) and every mutable global. clean has
// checked that the memory did not grow.
func (sp *slotPool) restore(s *slot) error {
	if pk := s.park; pk != nil {
		// Restored while its goroutine waits at proc_exit (park.go).
		if len(pk.mem.buf) != pk.size {
			return fmt.Errorf("the instance's memory is %d bytes, want %d", len(pk.mem.buf), pk.size)
		}
		s.restoreMapped(pk.image, pk.buf(), pk.view)
		setGlobals(s.globals, pk.values)
		return nil
	}
	fp := sp.p.fast
	if len(s.mem.buf) != len(fp.memory) {
		// The instance's memory was released under it (its module was
		// closed while it waited, e.g. by a host closing): drop it.
		return fmt.Errorf("the instance's memory is gone (%d bytes, want %d)", len(s.mem.buf), len(fp.memory))
	}
	if sp.mode == restoreDrop && s.mapping != nil {
		if err := sp.image.reset(s.mapping); err != nil {
			return err
		}
	} else if s.mapping != nil {
		s.restoreMapped(sp.image, s.mem.buf, fp.memory)
	} else {
		restoreDirty(s.mem.buf, fp.memory, everyPage)
	}
	setGlobals(s.globals, fp.values)
	return nil
}

// restoreMapped restores mem, a private mapping of image, to snap (the
// image's bytes): only the pages pagemap reports written are compared,
// and their count is what the instance holds privately.
func (s *slot) restoreMapped(image *cowImage, mem, snap []byte) {
	var maybe func(int) bool
	s.pagemap, maybe = image.written(mem, s.pagemap)
	_, s.private = restoreDirty(mem, snap, maybe)
}

// mutableGlobals returns the module's mutable globals exported as names.
func mutableGlobals(mod api.Module, names []string) ([]api.MutableGlobal, error) {
	out := make([]api.MutableGlobal, 0, len(names))
	for _, name := range names {
		g, ok := mod.ExportedGlobal(name).(api.MutableGlobal)
		if !ok {
			return nil, fmt.Errorf("global export %s is not mutable", name)
		}
		out = append(out, g)
	}
	return out, nil
}

// setGlobals sets each global back to its snapshot value.
func setGlobals(globals []api.MutableGlobal, values []uint64) {
	for i, g := range globals {
		g.Set(values[i])
	}
}

// clean reports whether a call left the instance reusable (see the file
// comment); why says what was left behind otherwise.
func (p *prepared) clean(s *slot) (ok bool, why string) {
	var fds uint32
	if pk := s.park; pk != nil {
		if len(pk.mem.buf) != pk.size {
			return false, "memory grew"
		}
		if pk.served >= parkRetire {
			return false, fmt.Sprintf("retired after %d calls", pk.served)
		}
		fds = p.command.fds
	} else {
		fp := p.fast
		if uint64(len(s.mem.buf)) != uint64(len(fp.memory)) || s.mem.orig == nil {
			return false, "memory grew"
		}
		fds = fp.fds
	}
	if !s.fds.balanced() {
		return false, "files left open: " + s.fds.String()
	}
	if n := s.roots.count(); n > 2*(1+len(s.mounts.fss)) {
		return false, fmt.Sprintf("%d mount roots left open", n)
	}
	res, err := s.check.Call(context.Background(), uint64(fds))
	if err != nil || len(res) != 1 {
		return false, fmt.Sprintf("fd check failed: %v", err)
	}
	if fd := api.DecodeI32(res[0]); fd >= 0 {
		return false, fmt.Sprintf("descriptor %d closed", fd)
	}
	return true, ""
}

// runReused serves one call on a pooled instance. It reports ok false,
// having done nothing, when no instance is ready.
func (p *prepared) runReused(ctx context.Context, sp *slotPool, req runner.Request) (res runner.Result, ok bool, err error) {
	// Run guest code in turn with the other callers (admit.go).
	turn := p.r.pools.gate.enter(ctx)
	defer turn.leave()
	s := sp.take(ctx)
	if s == nil {
		return runner.Result{}, false, nil
	}
	ctx, stop, release := callContext(ctx, p.limits.Timeout)
	defer release()
	for _, fs := range s.mounts.fss {
		fs.Reopen()
	}
	c := &call{stop: stop, logs: limitio.NewLines(limitio.DefaultLogBytes), mounts: s.mounts}
	s.mounts.denials.Reset(c.logs.Add)
	c.stdout = limitio.NewWriter(p.limits.MaxOutputBytes, func() { stop(errOutputLimit) })
	c.memory = &memoryCap{limit: p.limits.MemoryBytes}
	size := p.snapshotSize(s)
	s.setCap(c.memory)
	s.fds.reset()
	// The meter's budget: the deadline always, fuel when limited.
	c.budget = &meter.Budget{Fuel: p.limits.Fuel}
	ctx = meter.WithBudget(ctx, c.budget)
	sleep := sleeper(ctx)
	s.io.in, s.io.out, s.io.errOut = bytes.NewReader(req.Input), c.stdout, c.logs
	rec := p.callRecorder()
	s.io.rec = rec
	s.io.sleep = func(ns int64) {
		// A sleeping guest leaves its turn to the others.
		turn.leave()
		sleep(ns)
		turn.reenter(ctx)
	}

	var runErr error
	ran, returned := false, false
	if !c.memory.grow(uint64(size)) {
		// The snapshot alone is above this call's cap, as a command's
		// initial memory can be: stopped before the guest runs.
		stop(errMemoryLimit)
	} else {
		returned, runErr = s.run(ctx)
		ran = true
	}
	stopped := context.Cause(ctx)
	turn.leave()
	s.io.in, s.io.out, s.io.errOut, s.io.sleep, s.io.rec = nil, nil, nil, nil, nil
	reuse, why := false, "the call did not return"
	if ran && stopped == nil && returned {
		reuse, why = p.clean(s)
	}
	if s.park != nil && ran && stopped == nil && !returned && runErr == nil {
		// Every instance of the tool would do the same: stop parking.
		sp.disable(why)
	}
	s.roots.release()
	if err := c.close(); err != nil {
		p.logger.Warn("cleanup after call", "error", err)
	}
	res, err = p.result(c, runErr, stopped)
	res.Recorded = p.recordedSlot(s, rec)
	s.mounts.denials.Reset(nil)
	if ran && !reuse {
		p.logger.Debug("pooled instance discarded", "reason", why)
	}
	sp.giveBack(s, reuse || !ran)
	if err != nil {
		return runner.Result{}, true, fmt.Errorf("wasm run %s: %w", p.toolID, err)
	}
	if req.Logger != nil && res.Err != nil {
		req.Logger.Debug("wasm call failed", "code", res.Err.Code, "denied", c.mounts.denials.Count())
	}
	return res, true, nil
}
