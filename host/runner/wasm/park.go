package wasm

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/agenthost/agenthost/host/internal/wasiguard"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
)

// Parked commands (docs/POOLS.md, "Commands"). A plain wasi-command tool
// (a Go program reading its arguments from stdin, without the guest SDK)
// spends most of a call starting its runtime. Its pooled instances are
// started once and parked at a read of stdin, and every call resumes one
// from there:
//
//   - start-up: the instance runs _start with the WASI functions fd_read
//     and proc_exit taken over (host/internal/wasiguard). Its first read
//     of stdin gets EINTR; a guest that retries (Go's os package does)
//     reads again, and there the instance parks: its memory becomes a
//     private mapping of a snapshot image (cow_linux.go), its mutable
//     globals are recorded and wazero takes a snapshot of its stack
//     (experimental.Snapshotter);
//   - the probe: the start-up resumes once from that snapshot, as a call
//     would, so the parked read returns EINTR. The guest must read stdin
//     again, and its memory and globals there must be exactly those it
//     parked with (a retry that changes state parks again there, up to
//     parkProbes times). The instance then waits at that read;
//   - a call: the instance resumes from the snapshot (EINTR, then the
//     retry reads the call's stdin, its stack snapshotted anew since a
//     restored stack is the one the call then runs on) and runs to
//     proc_exit, where it waits again. The pool restores the memory
//     pages the call wrote and the globals, and the next call resumes
//     from the latest stack snapshot, which holds the same state.
//
// So each call starts from the same state, as a fresh instance would
// after its start-up, and sees only its own stdin, stdout, files and
// clocks. What the guest did before parking is done once per instance:
// an instance whose start-up opened a file or wrote output is not parked
// (the file could change, the output would be lost), and the time and
// random numbers a start-up read are those of the instance's own start.
// A guest that does not retry a read after EINTR, whose state differs at
// every retry, that returns from _start instead of calling proc_exit, or
// whose start-up fails is not parked again: its calls take the plain
// path.

// errnoIntr is WASI's EINTR.
const errnoIntr = 27

// parkProbes is how many times a start-up parks and resumes before the
// state at the read it resumes to must be the one it parked in.
const parkProbes = 3

// parkRetire is how many calls a parked instance serves before it is
// replaced. Each call takes a new stack snapshot, and wazero makes each
// snapshot's copy of the stack 16 bytes longer than the stack it copies;
// replacing the instance (one start-up, a few milliseconds in the
// background) bounds that growth to 16 KiB.
const parkRetire = 1024

// errNotParkable says why a command's instance cannot be parked.
type errNotParkable struct{ why string }

func (e *errNotParkable) Error() string { return "not parkable: " + e.why }

// parkState is where a parked instance's goroutine is.
type parkState int

const (
	parkBoot    parkState = iota // running _start, stdin not read yet
	parkRetry                    // the first read got EINTR
	parkProbe                    // parked and resumed once, as a check
	parkWaiting                  // parked, waiting for a call
	parkResumed                  // restored; the retried read not seen yet
	parkRunning                  // a call is running
)

// parked is the goroutine running a command instance's _start, and the
// instance's snapshot. The fields below the channels belong to the
// instance's goroutine while it runs guest code and to the pool while it
// waits; the channels order the handoffs.
type parked struct {
	ctx    *switchContext
	calls  chan *parkCall // the next call; closed to stop the instance
	booted chan error     // the start-up's outcome, once
	done   chan struct{}  // closed when _start has returned

	state parkState
	snap  experimental.Snapshot
	cur   *parkCall
	// probes counts the parks of the start-up; reported is set once the
	// start-up's outcome was sent.
	probes   int
	reported bool
	// size is the memory's size at the park point, image its snapshot
	// (the memory, buf, is a private mapping of it) and view a read-only
	// mapping of the image.
	size   int
	image  *cowImage
	view   []byte
	mem    *parkMemory
	served int // calls handed to the instance
	// values are the mutable globals at the park point (the meter's
	// counter as 0).
	values []uint64
	// counter is the index of the meter's fuel counter in values, or -1.
	counter int
	globals []api.MutableGlobal
	fds     *fdCount
	io      *slotIO
	// startup is what the start-up saw up to the park point
	// (record.go), startupLost why that cannot replay it.
	startup     *runner.Inputs
	startupLost string
}

// parkCall is one call handed to a parked instance.
type parkCall struct {
	done   chan struct{}
	exited bool   // the guest called proc_exit and is parked again
	code   uint32 // its exit code
	err    error  // how _start ended when the instance did not park again
}

// switchContext is the context a parked instance's _start runs under: it
// reads as the current call's context (its deadline, cancellation and
// the meter's budget) and falls back to base for the keys set at
// start-up (the hooks, the snapshotter). cur is written only while the
// instance waits, before the call is handed over.
type switchContext struct {
	base context.Context
	cur  context.Context
}

func (c *switchContext) call() context.Context {
	if c.cur == nil {
		return c.base
	}
	return c.cur
}

// Deadline implements context.Context.
func (c *switchContext) Deadline() (time.Time, bool) { return c.call().Deadline() }

// Done implements context.Context.
func (c *switchContext) Done() <-chan struct{} { return c.call().Done() }

// Err implements context.Context.
func (c *switchContext) Err() error { return c.call().Err() }

// Value implements context.Context.
func (c *switchContext) Value(key any) any {
	if c.cur != nil {
		if v := c.cur.Value(key); v != nil {
			return v
		}
	}
	return c.base.Value(key)
}

// parkMemory is a parked instance's linear memory: the start of a
// reservation as large as the memory may grow, so the memory never moves
// (the snapshot image is mapped over it in place at the park point).
type parkMemory struct {
	cap    *memoryCap
	region []byte
	buf    []byte
}

// Allocate implements experimental.MemoryAllocator.
func (m *parkMemory) Allocate(uint64, uint64) experimental.LinearMemory { return m }

// Reallocate implements experimental.LinearMemory.
func (m *parkMemory) Reallocate(size uint64) []byte {
	if !m.cap.grow(size) || size > uint64(len(m.region)) {
		if m.buf != nil {
			return nil
		}
		// The module's initial memory is above the cap: wazero cannot
		// fail it, so the start-up is stopped through the budget (and
		// the instance is not parked, see park).
		if m.cap.tooSmall != nil {
			m.cap.tooSmall()
		}
		if size > uint64(len(m.region)) {
			m.buf = make([]byte, size)
			return m.buf
		}
	}
	m.buf = m.region[:size]
	return m.buf
}

// Free implements experimental.LinearMemory. The reservation stays
// mapped: wazero frees the memory of an instance its runtime closes even
// while the guest still runs on it, so the reservation is released only
// once the instance's goroutine has ended (parked.release).
func (m *parkMemory) Free() { m.buf = nil }

// prepareCommand prepares a command tool whose instances can be parked:
// its module rewritten (rewriteModule, cached like a reactor's) and a
// pool of parked instances. It returns nil, nil when the tool takes the
// plain path instead: a module the rewrite refuses, a deterministic tool
// (its clock and random stream are per call), no pool budget.
func (r *Runner) prepareCommand(ctx context.Context, tool *manifest.Tool, grant *policy.Grant, mounts []mount, sum string, code []byte, o prepOpts) (*prepared, error) {
	if grant.Limits.Deterministic || r.pools.budget == 0 {
		return nil, nil
	}
	rm, err := r.reactors.rewriteCommand(sum, func() ([]byte, error) {
		metered, _, err := r.instrument(code, sum)
		return metered, err
	})
	if err != nil || !rm.reusable {
		r.logger.Debug("command not parked", "tool", tool.ToolID, "reason", err)
		return nil, nil
	}
	fail := func(code abi.Code, format string, args ...any) error {
		return fmt.Errorf("wasm prepare %s: %w", tool.ToolID, abi.Errorf(code, format, args...))
	}
	mod, rt, interp, err := r.compileTier(ctx, o, "command-"+hex.EncodeToString(rm.digest[:]), rm.code)
	if err != nil {
		return nil, fail(abi.CodeLoadError, "compile %s: %v", tool.Handler.Module, err)
	}
	if _, ok := mod.ExportedFunctions()["_start"]; !ok {
		return nil, fail(abi.CodeLoadError, "module %s exports no _start: not a wasi-command", tool.Handler.Module)
	}
	p, err := r.newPrepared(tool, grant, mounts, mod, rt)
	if err != nil {
		return nil, fail(abi.CodeLoadError, "%v", err)
	}
	if interp {
		// The interpreter tier runs the same module from _start, a fresh
		// instance per call: parking is the compiled tier's.
		p.interp = true
		return p, nil
	}
	p.command = &commandPath{globals: rm.globals, counter: rm.counter, fds: uint32(3 + 1 + len(p.mounts))}
	p.command.slots = r.pools.newSlotPool(p)
	return p, nil
}

// newParkedSlot starts one command instance and parks it (see the file
// comment). The error is an *errNotParkable when the tool cannot be
// parked at all.
func (p *prepared) newParkedSlot() (_ *slot, err error) {
	cp := p.command
	s, cfg, err := p.slotBase()
	if err != nil {
		return nil, err
	}
	ms := s.mounts
	// The start-up may have used the mounts (a /tmp made, roots opened):
	// closed now, as after a call, and reopened by each call.
	defer func() {
		s.roots.release()
		for _, fs := range ms.fss {
			if cerr := fs.Close(); cerr != nil && err == nil {
				p.logger.Warn("cleanup after start-up", "error", cerr)
			}
		}
	}()
	limit := (p.limits.MemoryBytes + 1<<16 - 1) &^ (1<<16 - 1)
	region, err := reserve(int(min(limit, 1<<32)))
	if err != nil {
		return nil, &errNotParkable{why: err.Error()}
	}
	ctx, stop, releaseCtx := callContext(context.Background(), p.limits.Timeout)
	defer releaseCtx()
	mem := &parkMemory{cap: &memoryCap{limit: p.limits.MemoryBytes, tooSmall: func() { stop(errMemoryLimit) }}, region: region}
	pk := &parked{
		calls:   make(chan *parkCall),
		booted:  make(chan error, 1),
		done:    make(chan struct{}),
		mem:     mem,
		counter: cp.counter,
		fds:     s.fds,
		io:      s.io,
	}
	s.park, s.mem = pk, nil
	s.io.rec = newRecorder() // the start-up's, until the first call
	// The start-up runs under the tool's deadline, without a fuel limit
	// (a call's fuel counts from its park point).
	bootCtx := meter.WithBudget(ctx, &meter.Budget{})
	mod, err := p.rt.InstantiateModule(experimental.WithMemoryAllocator(bootCtx, mem), p.compiled, cfg)
	if err != nil {
		_ = release(region)
		return nil, err
	}
	s.mod = mod
	if pk.globals, err = mutableGlobals(mod, cp.globals); err != nil {
		p.closeModule(mod)
		_ = release(region)
		return nil, err
	}
	s.globals = pk.globals
	s.check = mod.ExportedFunction(exportFdCheck)
	start := mod.ExportedFunction("_start")
	if s.check == nil || start == nil {
		p.closeModule(mod)
		_ = release(region)
		return nil, fmt.Errorf("instance lacks _start or %s", exportFdCheck)
	}
	pk.ctx = &switchContext{base: experimental.WithSnapshotter(wasiguard.WithHooks(context.Background(), pk)), cur: bootCtx}
	go pk.run(start)
	if err = <-pk.booted; err != nil {
		pk.stop()
		p.closeModule(mod)
		pk.release()
		return nil, err
	}
	s.mapping = pk.buf()
	return s, nil
}

// run is the instance's goroutine: _start, until the instance is stopped
// or a call ends it.
func (pk *parked) run(start api.Function) {
	defer close(pk.done)
	_, err := start.Call(pk.ctx)
	switch {
	case pk.cur != nil:
		pk.cur.err = err
		if err == nil {
			// _start returned: the instance cannot park again; the call
			// itself succeeded (as a command returning from _start does).
			pk.cur.err = errReturned
		}
		close(pk.cur.done)
		pk.cur = nil
	default:
		pk.report(&errNotParkable{why: fmt.Sprintf("_start ended before a second read of stdin: %v", err)})
	}
}

// errReturned is a parked call's error when the guest returned from
// _start: a success, after which the instance is gone.
var errReturned = errors.New("_start returned")

// buf is the memory at the park point's size.
func (pk *parked) buf() []byte { return pk.mem.buf[:pk.size] }

// Read implements wasiguard.Hooks: the park point and the resumes.
func (pk *parked) Read(ctx context.Context, mod api.Module, stack []uint64) bool {
	if uint32(stack[0]) != 0 {
		return false
	}
	switch pk.state {
	case parkBoot:
		pk.state = parkRetry
		stack[0] = errnoIntr
		return true
	case parkRetry, parkProbe:
		if pk.state == parkProbe && pk.compare() == "" {
			// Resumed once, the guest read again in the very state it
			// was parked in: every call can start from it. Wait for
			// the first call here, at the point the snapshot holds.
			pk.snap = experimental.GetSnapshotter(ctx).Snapshot()
			if pk.counter >= 0 {
				// The probe ran on the start-up's fuel: a call's
				// counts from zero.
				pk.globals[pk.counter].Set(0)
			}
			pk.ctx.cur = nil
			pk.state = parkWaiting
			pk.report(nil)
			next, ok := <-pk.calls
			if !ok {
				pk.exit(ctx, mod)
			}
			pk.cur, pk.state = next, parkResumed
			pk.snap.Restore([]uint64{errnoIntr})
		}
		if pk.probes == parkProbes {
			pk.report(&errNotParkable{why: "the state after each retried read of stdin differs"})
			pk.exit(ctx, mod)
		}
		pk.probes++
		if err := pk.park(ctx, mod); err != nil {
			pk.report(err)
			pk.exit(ctx, mod)
		}
		// Resume once as a call would, to see the guest read again.
		pk.state = parkProbe
		pk.snap.Restore([]uint64{errnoIntr})
		return true // not reached: Restore resumes the guest at the read
	case parkResumed:
		pk.snap = experimental.GetSnapshotter(ctx).Snapshot()
		pk.state = parkRunning
		return false
	}
	return false
}

// Exit implements wasiguard.Hooks: a call's end, where the instance
// parks again.
func (pk *parked) Exit(ctx context.Context, mod api.Module, stack []uint64) bool {
	if pk.state != parkRunning || pk.cur == nil {
		return false
	}
	cur := pk.cur
	cur.exited, cur.code = true, uint32(stack[0])
	pk.cur, pk.state = nil, parkWaiting
	close(cur.done)
	next, ok := <-pk.calls
	if !ok {
		return false // stopped: wazero's proc_exit ends the instance
	}
	pk.cur = next
	pk.state = parkResumed
	pk.snap.Restore([]uint64{errnoIntr})
	return true // not reached: Restore resumes the guest at the park point
}

// park makes the current state the snapshot: checks that the start-up
// left nothing a call would miss, maps the memory onto its image,
// records the globals and snapshots the stack.
func (pk *parked) park(ctx context.Context, mod api.Module) error {
	if n := pk.io.stray.Load(); n > 0 {
		return &errNotParkable{why: fmt.Sprintf("the start-up wrote %d bytes of output", n)}
	}
	if n := pk.fds.opened.Load(); n > 0 {
		return &errNotParkable{why: fmt.Sprintf("the start-up opened %d files", n)}
	}
	if len(pk.mem.buf) == 0 || len(pk.mem.region) == 0 || &pk.mem.buf[0] != &pk.mem.region[0] {
		return &errNotParkable{why: "the memory is not in its reservation"}
	}
	if pk.image != nil {
		// A park before this one: the memory becomes a mapping of the
		// new image (mapOnto replaces the old one).
		_ = pk.image.unmap(pk.view)
		_ = pk.image.close()
		pk.image, pk.view = nil, nil
	}
	pk.size = int(mod.Memory().Size())
	im, err := newCOWImage(pk.buf())
	if err != nil {
		return &errNotParkable{why: err.Error()}
	}
	pk.image = im
	if err := im.mapOnto(pk.buf()); err != nil {
		return &errNotParkable{why: err.Error()}
	}
	if pk.view, err = im.view(); err != nil {
		return &errNotParkable{why: err.Error()}
	}
	pk.values = make([]uint64, len(pk.globals))
	for i, g := range pk.globals {
		if i != pk.counter {
			pk.values[i] = g.Get()
		}
	}
	if pk.counter >= 0 {
		// Each call's fuel counts from zero, as on the plain path.
		pk.globals[pk.counter].Set(0)
	}
	pk.snap = experimental.GetSnapshotter(ctx).Snapshot()
	if r := pk.io.rec; r != nil {
		pk.startup, pk.startupLost = r.inputs(), r.lost("start-up")
	}
	return nil
}

// report sends the start-up's outcome, once.
func (pk *parked) report(err error) {
	if !pk.reported {
		pk.reported = true
		pk.booted <- err
	}
}

// exit ends the instance from inside a WASI function, as proc_exit(0).
func (pk *parked) exit(ctx context.Context, mod api.Module) {
	_ = mod.CloseWithExitCode(ctx, 0)
	panic(sys.NewExitError(0))
}

// compare reports how the memory and globals at a resume differ from the
// snapshot ("" when they do not).
func (pk *parked) compare() string {
	for i, g := range pk.globals {
		if i != pk.counter && g.Get() != pk.values[i] {
			return fmt.Sprintf("global %d is %#x, was %#x", i, g.Get(), pk.values[i])
		}
	}
	if len(pk.mem.buf) != pk.size {
		return "the memory grew"
	}
	if !bytes.Equal(pk.buf(), pk.view) {
		return "the memory differs"
	}
	return ""
}

// call runs one call on the parked instance: ctx is the call's context,
// the slot's stdio already switched to the call's. returned is true when
// the guest exited through proc_exit and is parked again.
func (pk *parked) call(ctx context.Context) (returned bool, err error) {
	c := &parkCall{done: make(chan struct{})}
	pk.served++
	pk.ctx.cur = ctx
	select {
	case pk.calls <- c:
	case <-pk.done:
		return false, errors.New("the parked instance has ended")
	}
	<-c.done
	if !c.exited {
		if errors.Is(c.err, errReturned) {
			return false, nil
		}
		return false, c.err
	}
	if c.code != 0 {
		return true, sys.NewExitError(c.code)
	}
	return true, nil
}

// stop ends the instance's goroutine and waits for it. Idempotent.
func (pk *parked) stop() {
	select {
	case <-pk.done:
	default:
		close(pk.calls)
		<-pk.done
	}
}

// release unmaps the memory and the snapshot, once the goroutine has ended
// and the module is closed. Idempotent.
func (pk *parked) release() {
	if pk.mem.region != nil {
		_ = release(pk.mem.region)
		pk.mem.region, pk.mem.buf = nil, nil
	}
	if pk.view != nil {
		_ = pk.image.unmap(pk.view)
		pk.view = nil
	}
	if pk.image != nil {
		_ = pk.image.close()
	}
}
