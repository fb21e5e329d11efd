package wasm

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tetratelabs/wabin/binary"
	"github.com/tetratelabs/wabin/leb128"
	wabin "github.com/tetratelabs/wabin/wasm"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
)

// The fast path (docs/POOLS.md). A reactor tool (exports _initialize,
// agenthost_init and agenthost_call) is started once at Prepare: the
// host runs _initialize and agenthost_init and captures the instance's
// linear memory and mutable globals. Every call then instantiates a copy
// of the module whose data segments were removed, gets its linear memory
// from the snapshot (a pooled buffer already holding it, see pool.go),
// sets the mutable globals back to their snapshot values and calls
// agenthost_call. The instance itself, with its WASI state (descriptor
// table, stdio, mounts, clocks), is new per call, exactly as on the slow
// path.

// Exports of a reactor tool (docs/ABI.md, "Fast path (reactor)").
const (
	exportInitialize = "_initialize"
	exportInit       = "agenthost_init"
	// exportWarm is optional: the guest SDK's warm-up before the
	// snapshot (abi/guest, reactor_wasip1.go), run without a fuel limit.
	exportWarm = "agenthost_warm"
	exportCall = "agenthost_call"
	// reservedPrefix starts every export the host adds; a module may not
	// use it.
	reservedPrefix = "agenthost.snapshot."
	// globalExportPrefix names the exports the host adds for every
	// mutable global, so it can read them after start-up and reset them
	// per call.
	globalExportPrefix = reservedPrefix + "global."
	// exportFdCheck is the function (n i32) -> i32 the host adds to check
	// that descriptors 0..n-1 (stdio, then the preopened mounts) are all
	// still open after a call; it returns the first missing one or -1.
	exportFdCheck = reservedPrefix + "fdcheck"
)

// fastPath is the pre-initialised state of a reactor tool.
type fastPath struct {
	// globals are the host-added export names of the mutable globals
	// and their snapshot values (raw bits, as api.Global.Get returns).
	globals []string
	values  []uint64
	// memory is the linear memory right after agenthost_init.
	memory []byte
	// pool hands out buffers already holding memory for calls that get
	// a fresh instance; never nil (with no budget it copies on demand).
	pool memorySource
	// slots are the reusable instances; nil when the tool's instances
	// cannot be reused or there is no pool budget.
	slots *slotPool
	// fds is the number of descriptors every instance starts with (stdio
	// and the preopened mounts), for the fd check.
	fds uint32
	// rm is the module the snapshot is of; startup what its start-up
	// saw (record.go), startupLost why that cannot replay it.
	rm          *reactorModule
	startup     *runner.Inputs
	startupLost string
}

// reactorModule is a decoded reactor module and its rewrite for the fast
// path.
type reactorModule struct {
	// code is the module without data segments and with every mutable
	// global exported under globalExportPrefix.
	code []byte
	// initial is the start of the linear memory the original data
	// segments describe, initialSize bytes in all: the rest is zeros.
	initial     []byte
	initialSize int
	// globals are the added export names; counter is the index in
	// globals of the meter's fuel counter, or -1.
	globals []string
	counter int
	// reusable is true when an instance may serve several calls: no
	// function can change a table, and the module imports what the
	// added fd check calls.
	reusable bool
	// digest is the SHA-256 of code (set by reactorCache).
	digest [32]byte
}

// isReactor reports whether the module's exports make it a reactor tool.
// It decodes only the export section's names, so a module that does not
// decode is left to the compiler to reject.
func isReactor(code []byte) bool {
	names, err := exportNames(code)
	if err != nil {
		return false
	}
	return names[exportInitialize] && names[exportInit] && names[exportCall] && !names["_start"]
}

// rewriteReactor decodes a reactor module and returns its fast-path form.
// It refuses what a snapshot cannot capture: an imported memory or
// mutable global, passive data segments and data segments placed by a
// global.
func rewriteReactor(code []byte) (*reactorModule, error) { return rewriteModule(code, false) }

// rewriteModule is rewriteReactor, or, when command, the form a parked
// command instance runs (park.go): every mutable global exported and the
// fd check added, with the data segments kept (a parked instance starts
// from _start) and initial empty.
func rewriteModule(code []byte, command bool) (*reactorModule, error) {
	m, err := binary.DecodeModule(code, wabin.CoreFeaturesV2)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	importedGlobals := 0
	for _, im := range m.ImportSection {
		switch im.Type {
		case wabin.ExternTypeMemory:
			return nil, errors.New("a module with an imported memory cannot be snapshotted")
		case wabin.ExternTypeGlobal:
			if im.DescGlobal != nil && im.DescGlobal.Mutable {
				return nil, fmt.Errorf("a module importing the mutable global %s.%s cannot be snapshotted", im.Module, im.Name)
			}
			importedGlobals++
		}
	}
	if m.MemorySection == nil {
		return nil, errors.New("a module without a memory cannot be snapshotted")
	}
	var initial []byte
	if !command {
		if initial, err = initialMemory(m); err != nil {
			return nil, err
		}
	}
	size := len(initial)
	initial = bytes.TrimRight(initial, "\x00")
	counter := -1
	counterIndex := uint32(math.MaxUint32)
	for _, e := range m.ExportSection {
		if strings.HasPrefix(e.Name, reservedPrefix) {
			return nil, fmt.Errorf("export %q uses the host's reserved prefix", e.Name)
		}
		if e.Type == wabin.ExternTypeGlobal && e.Name == meter.CounterExport {
			counterIndex = e.Index
		}
	}
	var globals []string
	for i, g := range m.GlobalSection {
		if !g.Type.Mutable {
			continue
		}
		switch g.Type.ValType {
		case wabin.ValueTypeI32, wabin.ValueTypeI64, wabin.ValueTypeF32, wabin.ValueTypeF64:
		default:
			return nil, fmt.Errorf("mutable global %d has type %s, which cannot be snapshotted", i, wabin.ValueTypeName(g.Type.ValType))
		}
		idx := uint32(importedGlobals + i)
		name := globalExportPrefix + strconv.Itoa(int(idx))
		if idx == counterIndex {
			counter = len(globals)
		}
		globals = append(globals, name)
		m.ExportSection = append(m.ExportSection, &wabin.Export{Type: wabin.ExternTypeGlobal, Name: name, Index: idx})
	}
	if !command {
		m.DataSection = nil
		m.DataCountSection = nil
	}
	mutates, err := mutatesTables(m)
	reusable := err == nil && !mutates && addFdCheck(m)
	return &reactorModule{code: binary.EncodeModule(m), initial: initial, initialSize: size, globals: globals, counter: counter, reusable: reusable}, nil
}

// initialMemory is the linear memory a module's data segments describe.
func initialMemory(m *wabin.Module) ([]byte, error) {
	initial := make([]byte, uint64(m.MemorySection.Min)<<16)
	for i, d := range m.DataSection {
		if d.OffsetExpression == nil {
			return nil, fmt.Errorf("data segment %d is passive: a reactor with passive data cannot be pre-initialised", i)
		}
		if d.OffsetExpression.Opcode != wabin.OpcodeI32Const {
			return nil, fmt.Errorf("data segment %d is not placed by an i32.const", i)
		}
		off, _, err := leb128.DecodeInt32(bytes.NewReader(d.OffsetExpression.Data))
		if err != nil {
			return nil, fmt.Errorf("data segment %d offset: %w", i, err)
		}
		end := uint64(uint32(off)) + uint64(len(d.Init))
		if end > uint64(len(initial)) {
			return nil, fmt.Errorf("data segment %d ends at %d, past the initial memory of %d bytes", i, end, len(initial))
		}
		copy(initial[uint32(off):], d.Init)
	}
	return initial, nil
}

// addFdCheck appends and exports the fd check function (exportFdCheck)
// and reports whether it could: the module must import WASI's
// fd_fdstat_get and fd_prestat_get, which the check calls. Appending a
// function shifts no existing index.
func addFdCheck(m *wabin.Module) bool {
	fdstat, prestat := -1, -1
	funcs := 0
	for _, im := range m.ImportSection {
		if im.Type != wabin.ExternTypeFunc {
			continue
		}
		if im.Module == "wasi_snapshot_preview1" {
			switch im.Name {
			case "fd_fdstat_get":
				fdstat = funcs
			case "fd_prestat_get":
				prestat = funcs
			}
		}
		funcs++
	}
	if fdstat < 0 || prestat < 0 {
		return false
	}
	typeIdx := -1
	for i, ft := range m.TypeSection {
		if len(ft.Params) == 1 && ft.Params[0] == wabin.ValueTypeI32 && len(ft.Results) == 1 && ft.Results[0] == wabin.ValueTypeI32 {
			typeIdx = i
			break
		}
	}
	if typeIdx < 0 {
		typeIdx = len(m.TypeSection)
		m.TypeSection = append(m.TypeSection, &wabin.FunctionType{Params: []wabin.ValueType{wabin.ValueTypeI32}, Results: []wabin.ValueType{wabin.ValueTypeI32}})
	}
	// (func (param $n i32) (result i32) (local $fd i32)
	//   loop
	//     fd >= n: return -1
	//     errno := fd < 3 ? fd_fdstat_get(fd, 0) : fd_prestat_get(fd, 0)
	//     errno != 0: return fd
	//     fd++; br 0
	//   end
	//   -1)
	// Both calls write at address 0; the memory is restored afterwards.
	body := []byte{
		0x03, 0x40,
		0x20, 0x01, 0x20, 0x00, 0x4F, 0x04, 0x40, 0x41, 0x7F, 0x0F, 0x0B,
		0x20, 0x01, 0x41, 0x03, 0x49, 0x04, 0x7F,
		0x20, 0x01, 0x41, 0x00, 0x10,
	}
	body = append(body, leb128.EncodeUint32(uint32(fdstat))...)
	body = append(body, 0x05, 0x20, 0x01, 0x41, 0x00, 0x10)
	body = append(body, leb128.EncodeUint32(uint32(prestat))...)
	body = append(body,
		0x0B,
		0x04, 0x40, 0x20, 0x01, 0x0F, 0x0B,
		0x20, 0x01, 0x41, 0x01, 0x6A, 0x21, 0x01,
		0x0C, 0x00,
		0x0B,
		0x41, 0x7F,
		0x0B,
	)
	idx := funcs + len(m.FunctionSection)
	m.FunctionSection = append(m.FunctionSection, wabin.Index(typeIdx))
	m.CodeSection = append(m.CodeSection, &wabin.Code{LocalTypes: []wabin.ValueType{wabin.ValueTypeI32}, Body: body})
	m.ExportSection = append(m.ExportSection, &wabin.Export{Type: wabin.ExternTypeFunc, Name: exportFdCheck, Index: wabin.Index(idx)})
	return true
}

// prepareReactor prepares a reactor tool: it compiles the rewritten
// module (once per module), builds the prepared tool and takes its
// snapshot under the tool's grant, or reads the one stored on disk
// (snapshotcache.go). A stored snapshot is read and checked while
// the module compiles. Neither needs the other, and in a new process
// both take a while: the compile most of a first call, the read 6 ms.
func (r *Runner) prepareReactor(ctx context.Context, tool *manifest.Tool, grant *policy.Grant, mounts []mount, rm *reactorModule, o prepOpts) (*prepared, error) {
	key := ""
	var stored chan *fastPath
	if r.snapshots != nil && o.snap == nil {
		limits := callLimits(grant.Limits)
		if key = snapshotKey(rm, tool, grant, mounts, limits); key != "" {
			stored = make(chan *fastPath, 1) // never blocks: a failed compile leaves it unread
			go func() { stored <- r.snapshots.load(key, rm, limits.MemoryBytes) }()
		}
	}
	mod, rt, interp, err := r.compileTier(ctx, o, "reactor-"+hex.EncodeToString(rm.digest[:]), rm.code)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", tool.Handler.Module, err)
	}
	p, err := r.newPrepared(tool, grant, mounts, mod, rt)
	if err != nil {
		return nil, err
	}
	p.interp = interp
	var fp *fastPath
	switch {
	case o.snap != nil:
		// The interpreter tier's snapshot: the same module's state, so
		// the compiled tier need not run the start-up again.
		fp = &fastPath{globals: o.snap.globals, values: o.snap.values, memory: o.snap.memory, startup: o.snap.startup, startupLost: o.snap.startupLost}
	case stored != nil:
		fp = <-stored
		if fp != nil && fp.startup == nil && !p.limits.Deterministic {
			fp = nil // a call from it could not be replayed
		}
	}
	if fp == nil {
		var touched bool
		if fp, touched, err = p.snapshot(ctx, rm, p.callRecorder()); err != nil {
			return nil, err
		}
		if key != "" && !touched {
			r.snapshots.save(key, fp)
		}
	}
	fp.fds = uint32(3 + 1 + len(p.mounts)) // stdio, "/", the mounts
	fp.rm = rm
	p.fast = fp
	if interp {
		// The interpreter tier runs plain fresh instances: no pool.
		fp.pool = constantSource(fp.memory)
		return p, nil
	}
	if rm.reusable && !p.limits.Deterministic && r.pools.budget > 0 {
		fp.slots = r.pools.newSlotPool(p)
		fp.pool = newMappedSource(fp.slots.image, fp.memory)
	} else {
		fp.pool = r.pools.newPool(fp.memory, r.logger)
	}
	return p, nil
}

// snapshot runs the tool's start-up (_initialize, then agenthost_init,
// which runs the plugin's main) in an instance set up like a call's
// (same arguments, environment, mounts, limits) and captures its memory
// and mutable globals. The meter's fuel counter is captured as 0, so
// every call starts with an empty counter as on the slow path. touched
// reports whether the start-up used the file system at all. rec records
// (or replays) the start-up's clocks and random bytes; nil for a
// deterministic tool.
func (p *prepared) snapshot(ctx context.Context, rm *reactorModule, rec *recorder) (fp *fastPath, touched bool, err error) {
	p.r.startups.Add(1)
	ctx, stop, release := callContext(ctx, p.limits.Timeout)
	defer release()
	c, err := p.newCall(stop)
	if err != nil {
		return nil, false, err
	}
	defer p.release(c)
	c.rec = rec
	defer func() {
		if err := c.close(); err != nil {
			p.logger.Warn("cleanup after start-up", "error", err)
		}
	}()
	// The start-up sees the call's mounts through touchFS.
	pooled := c.mounts
	watched := *pooled
	var used atomic.Bool
	watched.fsc = pooled.wrapped(func(fs experimentalsys.FS) experimentalsys.FS { return touchFS{FS: fs, touched: &used} })
	c.mounts = &watched
	defer func() { c.mounts = pooled }()
	seed := &snapshotAllocator{cap: c.memory, pool: prefixSource{prefix: rm.initial, size: rm.initialSize}}
	ctx = experimental.WithMemoryAllocator(ctx, seed)
	// The meter's budget: the deadline always, fuel when limited.
	c.budget = &meter.Budget{Fuel: p.limits.Fuel}
	ctx = meter.WithBudget(ctx, c.budget)
	mod, err := p.rt.InstantiateModule(ctx, p.compiled, p.moduleConfig(ctx, c, nil))
	if err != nil {
		return nil, false, p.startupError("instantiate", c, err, context.Cause(ctx))
	}
	defer p.closeModule(mod)
	for _, name := range []string{exportInitialize, exportInit} {
		res, err := mod.ExportedFunction(name).Call(ctx)
		if err == nil && name == exportInit && (len(res) != 1 || api.DecodeI32(res[0]) != 0) {
			err = errors.New("agenthost_init did not return 0: main did not call guest.Run")
		}
		if err != nil {
			return nil, false, p.startupError(name, c, err, context.Cause(ctx))
		}
	}
	// The SDK's warm-up puts the runtime in the state a call leaves it
	// in (docs/POOLS.md, "Why warm the guest before the snapshot?"). It
	// is work the slow path does not do, so it does not count against
	// the tool's fuel; the deadline still applies.
	if warm := mod.ExportedFunction(exportWarm); warm != nil {
		if _, err := warm.Call(meter.WithBudget(ctx, &meter.Budget{})); err != nil {
			return nil, false, p.startupError(exportWarm, c, err, context.Cause(ctx))
		}
	}
	size := mod.Memory().Size()
	mem, ok := mod.Memory().Read(0, size)
	if !ok {
		return nil, false, errors.New("read the start-up memory")
	}
	fp = &fastPath{globals: rm.globals, values: make([]uint64, len(rm.globals)), memory: append([]byte(nil), mem...), rm: rm}
	if rec != nil {
		fp.startup, fp.startupLost = rec.inputs(), rec.lost("start-up")
	}
	for i, name := range rm.globals {
		g := mod.ExportedGlobal(name)
		if g == nil {
			return nil, false, fmt.Errorf("global export %s missing", name)
		}
		if i != rm.counter {
			fp.values[i] = g.Get()
		}
	}
	return fp, used.Load(), nil
}

// startupError describes a failed start-up with the call's result
// mapping (so a timeout, memory cap or guest error reads as on a call)
// and the guest's last log lines.
func (p *prepared) startupError(step string, c *call, err, stopped error) error {
	res, rerr := p.result(c, err, stopped)
	if rerr != nil {
		return fmt.Errorf("start-up %s: %w", step, rerr)
	}
	msg := err.Error()
	if res.Err != nil {
		msg = string(res.Err.Code) + ": " + res.Err.Message
	}
	if logs := c.logs.Lines(); len(logs) > 0 {
		msg += " (logs: " + strings.Join(logs[max(0, len(logs)-3):], " | ") + ")"
	}
	return fmt.Errorf("start-up %s: %s", step, msg)
}

// instantiateFast makes a call's instance from the snapshot: a fresh
// instance of the rewritten module (its memory comes from the snapshot
// through the call's allocator) with every mutable global set back.
func (fp *fastPath) instantiate(ctx context.Context, p *prepared, cfg wazero.ModuleConfig) (api.Module, error) {
	mod, err := p.rt.InstantiateModule(ctx, p.compiled, cfg)
	if err != nil {
		return nil, err
	}
	globals, err := mutableGlobals(mod, fp.globals)
	if err != nil {
		p.closeModule(mod)
		return nil, err
	}
	setGlobals(globals, fp.values)
	return mod, nil
}

// call runs agenthost_call; a non-zero return is the guest's exit code,
// reported as a sys.ExitError like a command's exit.
func (fp *fastPath) call(ctx context.Context, mod api.Module) error {
	_, err := callExport(ctx, mod.ExportedFunction(exportCall))
	return err
}

// callExport calls agenthost_call and maps a non-zero return to a
// sys.ExitError. returned is false when the guest did not return (a trap,
// proc_exit, a stopped call).
func callExport(ctx context.Context, fn api.Function) (returned bool, err error) {
	res, err := fn.Call(ctx)
	if err != nil {
		return false, err
	}
	if len(res) != 1 {
		return true, errors.New("agenthost_call returned no exit code")
	}
	if code := api.DecodeI32(res[0]); code != 0 {
		return true, sys.NewExitError(uint32(code))
	}
	return true, nil
}

// allocator returns the memory allocator of a call: the call's cap, and
// on the fast path the snapshot's memory under it.
func (p *prepared) allocator(c *call) experimental.MemoryAllocator {
	if p.fast == nil {
		return c.memory
	}
	return &snapshotAllocator{cap: c.memory, pool: p.fast.pool}
}

// Close releases what a prepared tool holds beyond its compiled module:
// the fast path's pool of ready memories (given back to the runner's
// budget). Calls still running finish normally; later calls copy the
// snapshot per call. The host calls it when it unloads the tool.
func (p *prepared) Close() error {
	if p.command != nil {
		p.command.slots.close()
	}
	if p.fast == nil {
		return nil
	}
	if mp, ok := p.fast.pool.(*memoryPool); ok {
		mp.close()
	}
	if p.fast.slots != nil {
		p.fast.slots.close()
	}
	return nil
}

// exportNames returns the names of a module's exports, reading the
// section headers and the export section only.
func exportNames(code []byte) (map[string]bool, error) {
	sec, err := section(code, 7) // the export section
	if err != nil {
		return nil, err
	}
	if sec == nil {
		return map[string]bool{}, nil
	}
	n, _, err := leb128.DecodeUint32(sec)
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, n)
	for range n {
		l, _, err := leb128.DecodeUint32(sec)
		if err != nil || uint64(l) > uint64(sec.Len()) {
			return nil, errors.New("truncated export name")
		}
		name := make([]byte, l)
		_, _ = sec.Read(name)
		if _, err := sec.ReadByte(); err != nil { // kind
			return nil, err
		}
		if _, _, err := leb128.DecodeUint32(sec); err != nil {
			return nil, err
		}
		names[string(name)] = true
	}
	return names, nil
}
