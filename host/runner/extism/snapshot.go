package extism

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/agenthost/agenthost/host/internal/filecache"
	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/tetratelabs/wabin/binary"
	"github.com/tetratelabs/wabin/leb128"
	"github.com/tetratelabs/wabin/wasm"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// snapshotGlobalPrefix names the exports added for a module's mutable
// globals so a snapshot can read and restore them.
const snapshotGlobalPrefix = "agenthost.snapshot.global."

// snapshotInitTimeout bounds the template instance's initialisation.
const snapshotInitTimeout = 30 * time.Second

// snapshot is the state of an instance right after its runtime
// initialiser ran: its linear memory and mutable globals. Calls run in
// instances of a copy of the module without data segments; the memory is
// filled from the snapshot (one copy, made by limitMemory) and the globals
// are set, so neither the data segments nor the initialiser run again.
// Every call still gets its own instance and its own copy of the memory:
// nothing of one call reaches the next.
type snapshot struct {
	compiled wazero.CompiledModule
	memory   []byte
	globals  []snapshotGlobal
}

// snapshotGlobal is one restored global.
type snapshotGlobal struct {
	name  string
	value uint64
}

// strippedModule is a module rewritten for snapshots: no data segments
// (kept here to be written into the template by hand) and every mutable
// global exported under snapshotGlobalPrefix.
type strippedModule struct {
	compiled wazero.CompiledModule
	segments []dataSegment
	globals  []string
}

// dataSegment is an active data segment with a constant offset.
type dataSegment struct {
	offset uint32
	init   []byte
}

// stripModule rewrites code (the instrumented module) for snapshots, or
// says why it does not qualify: a snapshot needs a WASI reactor whose only
// initialiser is _initialize (Go, Rust reactors; not Haskell's hs_init),
// a memory it defines itself, and active data segments with constant
// offsets. guard checks the compiled file wazero reads and writes.
func stripModule(ctx context.Context, rt wazero.Runtime, guard *filecache.Compiled, code []byte) (*strippedModule, error) {
	m, err := binary.DecodeModule(code, wasm.CoreFeaturesV2)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	reactor := false
	for _, e := range m.ExportSection {
		if e.Type == wasm.ExternTypeFunc && e.Name == "hs_init" {
			return nil, fmt.Errorf("a Haskell runtime (hs_init)")
		}
		reactor = reactor || (e.Type == wasm.ExternTypeFunc && e.Name == "_initialize")
	}
	if !reactor {
		return nil, fmt.Errorf("no _initialize to snapshot")
	}
	importedGlobals := 0
	for _, imp := range m.ImportSection {
		switch imp.Type {
		case wasm.ExternTypeMemory:
			return nil, fmt.Errorf("the memory is imported")
		case wasm.ExternTypeGlobal:
			importedGlobals++
		}
	}
	if m.MemorySection == nil {
		return nil, fmt.Errorf("no memory")
	}
	if m.DataCountSection != nil {
		return nil, fmt.Errorf("data count section (bulk memory data segments)")
	}
	s := &strippedModule{}
	for _, d := range m.DataSection {
		e := d.OffsetExpression
		if e == nil || e.Opcode != wasm.OpcodeI32Const {
			return nil, fmt.Errorf("a data segment without a constant offset")
		}
		off, _, err := leb128.DecodeInt32(bytes.NewReader(e.Data))
		if err != nil {
			return nil, fmt.Errorf("data segment offset: %w", err)
		}
		s.segments = append(s.segments, dataSegment{offset: uint32(off), init: d.Init})
	}
	for i, g := range m.GlobalSection {
		if !g.Type.Mutable {
			continue
		}
		name := snapshotGlobalPrefix + strconv.Itoa(i)
		m.ExportSection = append(m.ExportSection, &wasm.Export{Type: wasm.ExternTypeGlobal, Name: name, Index: wasm.Index(importedGlobals + i)})
		s.globals = append(s.globals, name)
	}
	m.DataSection = nil
	stripped := binary.EncodeModule(m)
	if err = guard.Guard(stripped, func() (err error) { s.compiled, err = rt.CompileModule(ctx, stripped); return err }); err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	return s, nil
}

// takeSnapshot initialises a template instance of st under p's grant (the
// data segments by hand, then _initialize) and keeps its memory and
// mutable globals.
func (p *prepared) takeSnapshot(ctx context.Context, st *strippedModule) (*snapshot, error) {
	if len(p.inits) != 1 || p.inits[0] != "_initialize" {
		return nil, fmt.Errorf("initialisers %v are not a lone _initialize", p.inits)
	}
	ictx, cancel := context.WithTimeout(ctx, snapshotInitTimeout)
	defer cancel()
	in := p.newInstance()
	in.mem.limit = 0
	// The template sees the same preopens as every call, so whatever the
	// initialiser learns of them holds after a restore.
	if err := p.acquireMounts(in); err != nil {
		return nil, err
	}
	defer p.releaseMounts(in)
	callCtx := in.context(ictx)
	tmpl, err := p.r.rt.InstantiateModule(callCtx, st.compiled, p.moduleConfig(ictx, in))
	if err != nil {
		return nil, fmt.Errorf("instantiate template: %w", err)
	}
	defer tmpl.Close(ctx)
	mem := tmpl.Memory()
	for _, seg := range st.segments {
		if !mem.Write(seg.offset, seg.init) {
			return nil, fmt.Errorf("data segment at %d out of memory", seg.offset)
		}
	}
	if _, err := tmpl.ExportedFunction("_initialize").Call(callCtx); err != nil {
		return nil, fmt.Errorf("initialise template: %w", err)
	}
	view, ok := mem.Read(0, mem.Size())
	if !ok {
		return nil, fmt.Errorf("read template memory")
	}
	s := &snapshot{compiled: st.compiled, memory: append([]byte(nil), view...)}
	for _, name := range st.globals {
		g := tmpl.ExportedGlobal(name)
		if g == nil {
			return nil, fmt.Errorf("global %s not exported", name)
		}
		s.globals = append(s.globals, snapshotGlobal{name: name, value: g.Get()})
	}
	return s, nil
}

// restore brings a new instance of s.compiled to the snapshot: its memory
// grows to the snapshot's size (limitMemory fills it from the image, or
// refuses past the memory cap) and its mutable globals are set, with the
// meter's counter at zero as in a new instance (its first instructions
// then ask the call's own budget for fuel). It reports false when the
// memory cap refused the growth.
func (s *snapshot) restore(mod api.Module) (bool, error) {
	mem := mod.Memory()
	if want := uint32(len(s.memory)); mem.Size() < want {
		if _, ok := mem.Grow((want - mem.Size()) / 65536); !ok {
			return false, nil
		}
	}
	for _, g := range s.globals {
		mg, ok := mod.ExportedGlobal(g.name).(api.MutableGlobal)
		if !ok {
			return false, fmt.Errorf("restore snapshot: global %s is not mutable", g.name)
		}
		mg.Set(g.value)
	}
	if c, ok := mod.ExportedGlobal(meter.CounterExport).(api.MutableGlobal); ok {
		c.Set(0)
	}
	return true, nil
}
