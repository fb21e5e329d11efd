package meter

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Version identifies the metering pass: the instruction cost model and the
// shape of the rewritten module. It is part of every cache key, so a
// change to either must bump it.
const Version = "1"

// Names the instrumented module uses to talk to the host.
const (
	// ImportModule is the module name of the functions the instrumented
	// guest imports. A module that imports anything from it already is
	// rejected, so a guest can never call the meter itself.
	ImportModule = "agenthost"
	// RefillName is the import (i64 counter) -> (i64 counter) the guest
	// calls when its counter goes below zero.
	RefillName = "fuel_refill"
	// SettleName is the import (i64 counter) -> () that the settle export
	// calls to hand the remaining counter to the host.
	SettleName = "fuel_settle"
	// CounterExport is the name under which the instrumented module exports
	// its fuel counter, a mutable i64 global.
	CounterExport = "agenthost.fuel"
	// SettleExport is the name of the exported function () -> () that
	// reports the remaining counter to the host (through SettleName) and
	// zeroes it. Runners that cannot read CounterExport (the Extism SDK
	// hides the guest module) call it after each call.
	SettleExport = "agenthost.fuel_settle"
)

// addedFuncs is the number of functions the pass imports (refill, settle);
// every function defined by the module shifts by that much.
const addedFuncs = 2

// Section ids of the WebAssembly binary format.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

// sectionRank orders sections as the binary format requires (data count
// sits between element and code); 0 marks an unknown id.
func sectionRank(id byte) int {
	switch {
	case id >= secType && id <= secElement:
		return int(id)
	case id == secDataCount:
		return 10
	case id == secCode, id == secData:
		return int(id) + 1
	}
	return 0
}

// lastRank is the rank after every section's.
const lastRank = 13

// wasmHeader is the magic number and version of a binary module.
const wasmHeader = "\x00asm\x01\x00\x00\x00"

// section is one section of the input module, its payload not copied.
type section struct {
	id      byte
	name    string // custom sections only
	payload []byte
}

// module holds what the pass learns about a module before rewriting it.
type module struct {
	sections         []section
	numTypes         uint32
	typeParams       []uint32 // parameter count of each type
	funcTypes        []uint32 // type index of each defined function
	numImportedFuncs uint32
	numDefinedFuncs  uint32
	numGlobals       uint32 // imported and defined
}

// Instrument returns a copy of the WebAssembly module wasm rewritten for
// fuel metering:
//
//   - it imports RefillName and SettleName from ImportModule (appended to
//     the imports, so only defined functions are renumbered, and every
//     call, ref.func, element segment, export, start function and name
//     entry is renumbered with them);
//   - it defines a mutable i64 counter global, initially 0, exported as
//     CounterExport, and the function SettleExport;
//   - every segment of straight-line code charges its instruction count
//     against the counter on entry, and calls the refill import when the
//     counter goes below zero (see the package documentation for the cost
//     model).
//
// DWARF custom sections (".debug_*") are dropped, as their code offsets no
// longer hold; every other custom section is kept. Instrument rejects
// malformed modules, modules that already import from ImportModule or
// export CounterExport or SettleExport, and instructions outside the
// WebAssembly 2.0 set plus tail calls, atomics and relaxed SIMD. The
// result is deterministic: the same input always gives the same bytes.
func Instrument(wasm []byte) ([]byte, error) {
	m, err := parseModule(wasm)
	if err != nil {
		return nil, fmt.Errorf("instrument: %w", err)
	}
	out, err := m.rewrite(len(wasm))
	if err != nil {
		return nil, fmt.Errorf("instrument: %w", err)
	}
	return out, nil
}

// parseModule splits wasm into sections and counts types, functions and
// globals.
func parseModule(wasm []byte) (*module, error) {
	if !bytes.HasPrefix(wasm, []byte(wasmHeader)) {
		return nil, errors.New("not a WebAssembly 1.0 binary module")
	}
	m := &module{}
	r := &reader{b: wasm, pos: len(wasmHeader)}
	prevRank := 0
	for !r.eof() {
		id, _ := r.byte()
		size, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("section header: %w", err)
		}
		payload, err := r.bytes(int(size))
		if err != nil {
			return nil, fmt.Errorf("section %d: %w", id, err)
		}
		s := section{id: id, payload: payload}
		if id == secCustom {
			pr := &reader{b: payload}
			if s.name, err = pr.name(); err != nil {
				return nil, fmt.Errorf("custom section name: %w", err)
			}
			m.sections = append(m.sections, s)
			continue
		}
		rank := sectionRank(id)
		if rank == 0 {
			return nil, fmt.Errorf("unknown section id %d", id)
		}
		if rank <= prevRank {
			return nil, fmt.Errorf("section %d out of order or repeated", id)
		}
		prevRank = rank
		m.sections = append(m.sections, s)
		pr := &reader{b: payload}
		switch id {
		case secType:
			err = m.scanTypes(pr)
		case secImport:
			err = m.scanImports(pr)
		case secFunction:
			err = m.scanFunctions(pr)
		case secGlobal:
			var n uint32
			n, err = pr.u32()
			m.numGlobals += n
		}
		if err == nil && (id == secType || id == secImport || id == secFunction) && !pr.eof() {
			err = fmt.Errorf("%d bytes after the last entry", len(payload)-pr.pos)
		}
		if err != nil {
			return nil, fmt.Errorf("section %d: %w", id, err)
		}
	}
	return m, nil
}

// scanTypes records the parameter count of each function type.
func (m *module) scanTypes(r *reader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	m.numTypes = n
	for i := uint32(0); i < n; i++ {
		form, err := r.byte()
		if err != nil {
			return err
		}
		if form != 0x60 {
			return fmt.Errorf("type %d: unsupported type form 0x%02x", i, form)
		}
		params, err := r.u32()
		if err != nil {
			return err
		}
		if _, err := r.bytes(int(params)); err != nil {
			return err
		}
		results, err := r.u32()
		if err != nil {
			return err
		}
		if _, err := r.bytes(int(results)); err != nil {
			return err
		}
		m.typeParams = append(m.typeParams, params)
	}
	return nil
}

// scanFunctions records the type of each defined function.
func (m *module) scanFunctions(r *reader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	m.numDefinedFuncs = n
	for i := uint32(0); i < n; i++ {
		t, err := r.u32()
		if err != nil {
			return err
		}
		if t >= m.numTypes {
			return fmt.Errorf("function %d: type index %d out of range", i, t)
		}
		m.funcTypes = append(m.funcTypes, t)
	}
	return nil
}

// scanImports counts imported functions and globals and rejects imports
// from ImportModule.
func (m *module) scanImports(r *reader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		mod, err := r.name()
		if err != nil {
			return err
		}
		name, err := r.name()
		if err != nil {
			return err
		}
		if mod == ImportModule {
			return fmt.Errorf("module already imports %s.%s: the %q namespace is reserved for the meter", mod, name, ImportModule)
		}
		kind, err := r.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0x00: // func
			if _, err := r.u32(); err != nil {
				return err
			}
			m.numImportedFuncs++
		case 0x01: // table
			if _, err := r.byte(); err != nil {
				return err
			}
			err = skipLimits(r)
		case 0x02: // memory
			err = skipLimits(r)
		case 0x03: // global
			_, err = r.bytes(2)
			m.numGlobals++
		default:
			return fmt.Errorf("unsupported import kind %d of %s.%s", kind, mod, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func skipLimits(r *reader) error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if flags > 0x03 {
		return fmt.Errorf("unsupported limits flags 0x%02x", flags)
	}
	if _, err := r.u32(); err != nil {
		return err
	}
	if flags&0x01 != 0 {
		_, err = r.u32()
	}
	return err
}

// rewrite builds the instrumented module.
func (m *module) rewrite(sizeHint int) ([]byte, error) {
	numFuncs := m.numImportedFuncs + m.numDefinedFuncs
	w := &rewriter{
		numImportedFuncs: m.numImportedFuncs,
		numFuncs:         numFuncs,
		numGlobals:       m.numGlobals,
		addedFuncs:       addedFuncs,
		counter:          m.numGlobals,
		refill:           m.numImportedFuncs,
		typeParams:       m.typeParams,
	}
	settleImport := m.numImportedFuncs + 1
	settleFunc := numFuncs + addedFuncs
	typeRefill, typeSettle, typeVoid := m.numTypes, m.numTypes+1, m.numTypes+2

	out := make([]byte, 0, sizeHint+sizeHint/2+1024)
	out = append(out, wasmHeader...)
	emitted := map[byte]bool{}
	var buf []byte
	// required adds the sections the pass always needs, empty in the
	// input, before the first section ranked after them.
	required := func(before int) error {
		for _, id := range []byte{secType, secImport, secFunction, secGlobal, secExport, secCode} {
			if sectionRank(id) < before && !emitted[id] {
				var err error
				if buf, err = w.section(m, id, nil, buf[:0], typeRefill, typeSettle, typeVoid, settleImport, settleFunc); err != nil {
					return err
				}
				out = appendSection(out, id, buf)
				emitted[id] = true
			}
		}
		return nil
	}
	for _, s := range m.sections {
		if s.id == secCustom {
			switch {
			case strings.HasPrefix(s.name, ".debug_"):
				continue
			case s.name == "name":
				p, err := w.nameSection(s.payload)
				if err != nil {
					// The name section is for debugging only; a
					// malformed one is dropped rather than failing.
					continue
				}
				out = appendSection(out, secCustom, p)
			default:
				out = appendSection(out, secCustom, s.payload)
			}
			continue
		}
		if err := required(sectionRank(s.id)); err != nil {
			return nil, err
		}
		var err error
		if buf, err = w.section(m, s.id, s.payload, buf[:0], typeRefill, typeSettle, typeVoid, settleImport, settleFunc); err != nil {
			return nil, fmt.Errorf("section %d: %w", s.id, err)
		}
		out = appendSection(out, s.id, buf)
		emitted[s.id] = true
	}
	if err := required(lastRank); err != nil {
		return nil, err
	}
	return out, nil
}

func appendSection(out []byte, id byte, payload []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(payload)))
	return append(out, payload...)
}

// section rewrites one non-custom section (payload nil: absent in the
// input) into dst.
func (w *rewriter) section(m *module, id byte, payload, dst []byte, typeRefill, typeSettle, typeVoid, settleImport, settleFunc uint32) ([]byte, error) {
	r := &reader{b: payload}
	out, err := w.sectionBody(m, id, payload, r, dst, typeRefill, typeSettle, typeVoid, settleImport, settleFunc)
	if err == nil && !r.eof() {
		switch id {
		case secGlobal, secExport, secStart, secElement, secCode:
			err = fmt.Errorf("%d bytes after the last entry", len(payload)-r.pos)
		}
	}
	return out, err
}

// sectionBody does the work of section with the payload's reader r.
func (w *rewriter) sectionBody(m *module, id byte, payload []byte, r *reader, dst []byte, typeRefill, typeSettle, typeVoid, settleImport, settleFunc uint32) ([]byte, error) {
	count := func() (uint32, error) {
		if payload == nil {
			return 0, nil
		}
		return r.u32()
	}
	switch id {
	case secType:
		n, err := count()
		if err != nil {
			return nil, err
		}
		dst = appendU32(dst, n+3)
		dst = append(dst, r.b[r.pos:]...)
		dst = append(dst, 0x60, 1, 0x7e, 1, 0x7e) // (i64) -> (i64)
		dst = append(dst, 0x60, 1, 0x7e, 0)       // (i64) -> ()
		return append(dst, 0x60, 0, 0), nil       // () -> ()
	case secImport:
		n, err := count()
		if err != nil {
			return nil, err
		}
		dst = appendU32(dst, n+addedFuncs)
		dst = append(dst, r.b[r.pos:]...)
		dst = appendName(dst, ImportModule)
		dst = appendName(dst, RefillName)
		dst = append(dst, 0x00)
		dst = appendU32(dst, typeRefill)
		dst = appendName(dst, ImportModule)
		dst = appendName(dst, SettleName)
		dst = append(dst, 0x00)
		return appendU32(dst, typeSettle), nil
	case secFunction:
		n, err := count()
		if err != nil {
			return nil, err
		}
		dst = appendU32(dst, n+1)
		dst = append(dst, r.b[r.pos:]...)
		return appendU32(dst, typeVoid), nil
	case secGlobal:
		n, err := count()
		if err != nil {
			return nil, err
		}
		dst = appendU32(dst, n+1)
		for i := uint32(0); i < n; i++ {
			t, err := r.bytes(2) // value type, mutability
			if err != nil {
				return nil, err
			}
			dst = append(dst, t...)
			if dst, err = w.constExpr(r, dst); err != nil {
				return nil, fmt.Errorf("global %d: %w", i, err)
			}
		}
		return append(dst, 0x7e, 0x01, opI64Const, 0, opEnd), nil
	case secExport:
		return w.exports(r, count, dst, settleFunc)
	case secStart:
		idx, err := r.u32()
		if err != nil {
			return nil, err
		}
		if idx, err = w.funcIndex(idx); err != nil {
			return nil, err
		}
		return appendU32(dst, idx), nil
	case secElement:
		return w.elements(r, dst)
	case secCode:
		n, err := count()
		if err != nil {
			return nil, err
		}
		if n != m.numDefinedFuncs {
			return nil, fmt.Errorf("%d bodies for %d functions", n, m.numDefinedFuncs)
		}
		dst = appendU32(dst, n+1)
		var body []byte
		for i := uint32(0); i < n; i++ {
			size, err := r.u32()
			if err != nil {
				return nil, err
			}
			code, err := r.bytes(int(size))
			if err != nil {
				return nil, err
			}
			cr := &reader{b: code}
			groups, declared, groupsEnd, err := skipLocals(cr)
			if err != nil {
				return nil, fmt.Errorf("function %d: %w", m.numImportedFuncs+i, err)
			}
			// Declare the counter local after the function's own.
			body = appendU32(body[:0], groups+1)
			body = append(body, code[groupsEnd:cr.pos]...)
			body = append(body, 1, 0x7e)
			local := m.typeParams[m.funcTypes[i]] + declared
			if body, err = w.body(body, code[cr.pos:], local); err != nil {
				return nil, fmt.Errorf("function %d: %w", m.numImportedFuncs+i, err)
			}
			dst = appendU32(dst, uint32(len(body)))
			dst = append(dst, body...)
		}
		// The settle export: global.get $fuel; call $settle;
		// i64.const 0; global.set $fuel.
		body = append(body[:0], 0, opGlobalGet)
		body = appendU32(body, w.counter)
		body = append(body, opCall)
		body = appendU32(body, settleImport)
		body = append(body, opI64Const, 0, opGlobalSet)
		body = appendU32(body, w.counter)
		body = append(body, opEnd)
		dst = appendU32(dst, uint32(len(body)))
		return append(dst, body...), nil
	default: // table, memory, data count, data: unchanged
		return append(dst, payload...), nil
	}
}

// maxLocals bounds the locals of a function, as wazero does, so that the
// counter local's index cannot overflow.
const maxLocals = 1 << 27

// skipLocals skips the local declarations of a body and returns the
// number of groups, of locals declared, and the offset of the first group.
func skipLocals(r *reader) (groups, total uint32, first int, err error) {
	if groups, err = r.u32(); err != nil {
		return 0, 0, 0, err
	}
	first = r.pos
	var sum uint64
	for i := uint32(0); i < groups; i++ {
		c, err := r.u32()
		if err != nil {
			return 0, 0, 0, err
		}
		if sum += uint64(c); sum > maxLocals {
			return 0, 0, 0, fmt.Errorf("too many locals (more than %d)", maxLocals)
		}
		if _, err := r.byte(); err != nil {
			return 0, 0, 0, err
		}
	}
	return groups, uint32(sum), first, nil
}

// constExpr copies a constant expression, renumbering ref.func.
func (w *rewriter) constExpr(r *reader, dst []byte) ([]byte, error) {
	for {
		start := r.pos
		op, err := r.byte()
		if err != nil {
			return nil, err
		}
		switch op {
		case opEnd:
			return append(dst, op), nil
		case opRefFunc:
			idx, err := r.u32()
			if err != nil {
				return nil, err
			}
			if idx, err = w.funcIndex(idx); err != nil {
				return nil, err
			}
			dst = append(dst, op)
			dst = appendU32(dst, idx)
			continue
		case 0x41, 0x42, 0x43, 0x44, opGlobalGet, 0xd0, opPrefixSIMD,
			0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // consts, global.get, ref.null, v128.const, extended-const arithmetic
			if err := skipImmediates(r, op); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("opcode 0x%02x in a constant expression", op)
		}
		dst = append(dst, r.b[start:r.pos]...)
	}
}

// exports copies the export section, renumbering functions and appending
// the counter and the settle function.
func (w *rewriter) exports(r *reader, count func() (uint32, error), dst []byte, settleFunc uint32) ([]byte, error) {
	n, err := count()
	if err != nil {
		return nil, err
	}
	dst = appendU32(dst, n+2)
	for i := uint32(0); i < n; i++ {
		name, err := r.name()
		if err != nil {
			return nil, err
		}
		if name == CounterExport || name == SettleExport {
			return nil, fmt.Errorf("module already exports %q, a name reserved for the meter", name)
		}
		kind, err := r.byte()
		if err != nil {
			return nil, err
		}
		idx, err := r.u32()
		if err != nil {
			return nil, err
		}
		switch kind {
		case 0x00:
			if idx, err = w.funcIndex(idx); err != nil {
				return nil, fmt.Errorf("export %q: %w", name, err)
			}
		case 0x03:
			// The counter global is appended after the module's own: an
			// export of its index would hand it to other modules.
			if idx >= w.numGlobals {
				return nil, fmt.Errorf("export %q: global index %d out of range (%d globals)", name, idx, w.numGlobals)
			}
		}
		dst = appendName(dst, name)
		dst = append(dst, kind)
		dst = appendU32(dst, idx)
	}
	dst = appendName(dst, CounterExport)
	dst = append(dst, 0x03)
	dst = appendU32(dst, w.counter)
	dst = appendName(dst, SettleExport)
	dst = append(dst, 0x00)
	return appendU32(dst, settleFunc), nil
}

// elements copies the element section, renumbering functions in each of
// the eight segment encodings.
func (w *rewriter) elements(r *reader, dst []byte) ([]byte, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	dst = appendU32(dst, n)
	for i := uint32(0); i < n; i++ {
		flags, err := r.u32()
		if err != nil {
			return nil, err
		}
		if flags > 7 {
			return nil, fmt.Errorf("element segment %d: invalid flags %d", i, flags)
		}
		dst = appendU32(dst, flags)
		if flags&0x01 == 0 { // active
			if flags&0x02 != 0 { // explicit table index
				t, err := r.u32()
				if err != nil {
					return nil, err
				}
				dst = appendU32(dst, t)
			}
			if dst, err = w.constExpr(r, dst); err != nil {
				return nil, fmt.Errorf("element segment %d offset: %w", i, err)
			}
		}
		if flags&0x03 != 0 { // elemkind or reftype
			k, err := r.byte()
			if err != nil {
				return nil, err
			}
			dst = append(dst, k)
		}
		cnt, err := r.u32()
		if err != nil {
			return nil, err
		}
		dst = appendU32(dst, cnt)
		for j := uint32(0); j < cnt; j++ {
			if flags&0x04 != 0 { // expressions
				if dst, err = w.constExpr(r, dst); err != nil {
					return nil, fmt.Errorf("element segment %d: %w", i, err)
				}
				continue
			}
			idx, err := r.u32()
			if err != nil {
				return nil, err
			}
			if idx, err = w.funcIndex(idx); err != nil {
				return nil, fmt.Errorf("element segment %d: %w", i, err)
			}
			dst = appendU32(dst, idx)
		}
	}
	return dst, nil
}

// nameSection renumbers the function-indexed subsections of the name
// section (functions, locals, labels); the pass's own functions stay
// unnamed.
func (w *rewriter) nameSection(payload []byte) ([]byte, error) {
	r := &reader{b: payload}
	name, err := r.name()
	if err != nil {
		return nil, err
	}
	dst := appendName(nil, name)
	var sub []byte
	for !r.eof() {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		data, err := r.bytes(int(size))
		if err != nil {
			return nil, err
		}
		if id >= 1 && id <= 3 { // function, local and label names are keyed by function index
			if sub, err = w.renumberNameMap(data, sub[:0], id != 1); err != nil {
				return nil, err
			}
			data = sub
		}
		dst = append(dst, id)
		dst = appendU32(dst, uint32(len(data)))
		dst = append(dst, data...)
	}
	return dst, nil
}

// renumberNameMap renumbers the outer function index of a name map
// (indirect: each entry is itself a name map, copied unchanged).
func (w *rewriter) renumberNameMap(data, dst []byte, indirect bool) ([]byte, error) {
	r := &reader{b: data}
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	dst = appendU32(dst, n)
	for i := uint32(0); i < n; i++ {
		idx, err := r.u32()
		if err != nil {
			return nil, err
		}
		if idx, err = w.funcIndex(idx); err != nil {
			return nil, err
		}
		dst = appendU32(dst, idx)
		start := r.pos
		if indirect {
			m, err := r.u32()
			if err != nil {
				return nil, err
			}
			for j := uint32(0); j < m; j++ {
				if _, err := r.u32(); err != nil {
					return nil, err
				}
				if _, err := r.name(); err != nil {
					return nil, err
				}
			}
		} else if _, err := r.name(); err != nil {
			return nil, err
		}
		dst = append(dst, r.b[start:r.pos]...)
	}
	return dst, nil
}
