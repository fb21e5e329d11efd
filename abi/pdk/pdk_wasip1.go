//go:build wasip1

package pdk

import (
	"encoding/binary"
	"encoding/json"
	"errors"
)

//go:wasmimport extism:host/env alloc
func extismAlloc(n uint64) uint64

//go:wasmimport extism:host/env free
func extismFree(off uint64)

//go:wasmimport extism:host/env length
func extismLength(off uint64) uint64

//go:wasmimport extism:host/env load_u8
func extismLoadU8(off uint64) uint32

//go:wasmimport extism:host/env load_u64
func extismLoadU64(off uint64) uint64

//go:wasmimport extism:host/env store_u8
func extismStoreU8(off uint64, v uint32)

//go:wasmimport extism:host/env store_u64
func extismStoreU64(off uint64, v uint64)

//go:wasmimport extism:host/env input_length
func extismInputLength() uint64

//go:wasmimport extism:host/env input_load_u8
func extismInputLoadU8(i uint64) uint32

//go:wasmimport extism:host/env input_load_u64
func extismInputLoadU64(i uint64) uint64

//go:wasmimport extism:host/env output_set
func extismOutputSet(off, n uint64)

//go:wasmimport extism:host/env error_set
func extismErrorSet(off uint64)

//go:wasmimport extism:host/env config_get
func extismConfigGet(off uint64) uint64

//go:wasmimport extism:host/env var_get
func extismVarGet(off uint64) uint64

//go:wasmimport extism:host/env var_set
func extismVarSet(name, val uint64)

//go:wasmimport extism:host/env log_trace
func extismLogTrace(off uint64)

//go:wasmimport extism:host/env log_debug
func extismLogDebug(off uint64)

//go:wasmimport extism:host/env log_info
func extismLogInfo(off uint64)

//go:wasmimport extism:host/env log_warn
func extismLogWarn(off uint64)

//go:wasmimport extism:host/env log_error
func extismLogError(off uint64)

//go:wasmimport extism:host/env http_request
func extismHTTPRequest(req, body uint64) uint64

//go:wasmimport extism:host/env http_status_code
func extismHTTPStatusCode() int32

//go:wasmimport extism:host/env http_headers
func extismHTTPHeaders() uint64

// Memory is a block of kernel memory: the host and the plugin exchange
// data through it by offset.
type Memory struct {
	Offset uint64
	Length uint64
}

// Alloc allocates n bytes of kernel memory.
func Alloc(n int) Memory {
	return Memory{Offset: extismAlloc(uint64(n)), Length: uint64(n)}
}

// AllocBytes copies b into new kernel memory.
func AllocBytes(b []byte) Memory {
	m := Alloc(len(b))
	m.Store(b)
	return m
}

// FindMemory returns the block at off with its length (zero if none).
func FindMemory(off uint64) Memory {
	if off == 0 {
		return Memory{}
	}
	return Memory{Offset: off, Length: extismLength(off)}
}

// Free releases the block.
func (m Memory) Free() {
	if m.Offset != 0 {
		extismFree(m.Offset)
	}
}

// Store copies b (at most m.Length bytes) into the block, 8 bytes per
// host call.
func (m Memory) Store(b []byte) {
	if uint64(len(b)) > m.Length {
		b = b[:m.Length]
	}
	i := 0
	for ; i+8 <= len(b); i += 8 {
		extismStoreU64(m.Offset+uint64(i), binary.LittleEndian.Uint64(b[i:]))
	}
	for ; i < len(b); i++ {
		extismStoreU8(m.Offset+uint64(i), uint32(b[i]))
	}
}

// Load returns a copy of the block's bytes.
func (m Memory) Load() []byte {
	b := make([]byte, m.Length)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], extismLoadU64(m.Offset+uint64(i)))
	}
	for ; i < len(b); i++ {
		b[i] = byte(extismLoadU8(m.Offset + uint64(i)))
	}
	return b
}

// loadAndFree returns the bytes of the block at off and frees it; ok is
// false when off is 0.
func loadAndFree(off uint64) (b []byte, ok bool) {
	if off == 0 {
		return nil, false
	}
	m := FindMemory(off)
	b = m.Load()
	m.Free()
	return b, true
}

// Input returns the call's input bytes (for agenthost: the arguments
// JSON).
func Input() []byte {
	n := extismInputLength()
	b := make([]byte, n)
	i := uint64(0)
	for ; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], extismInputLoadU64(i))
	}
	for ; i < n; i++ {
		b[i] = byte(extismInputLoadU8(i))
	}
	return b
}

// InputJSON decodes the input into v.
func InputJSON(v any) error {
	if err := json.Unmarshal(Input(), v); err != nil {
		return errors.New("pdk: decode input: " + err.Error())
	}
	return nil
}

// Output sets the call's output.
func Output(b []byte) {
	m := AllocBytes(b)
	extismOutputSet(m.Offset, m.Length)
}

// OutputJSON encodes v as the call's output.
func OutputJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return errors.New("pdk: encode output: " + err.Error())
	}
	Output(b)
	return nil
}

// SetError reports err as the call's error message; the host turns it
// into TOOL_ERROR. The entry point should then return non-zero.
func SetError(err error) {
	if err == nil {
		return
	}
	m := AllocBytes([]byte(err.Error()))
	extismErrorSet(m.Offset)
}

// Config returns the value of a config key (handler.config overlaid by
// the operator's policy) and whether it is set.
func Config(key string) (string, bool) {
	k := AllocBytes([]byte(key))
	off := extismConfigGet(k.Offset)
	k.Free()
	b, ok := loadAndFree(off)
	return string(b), ok
}

// GetVar returns a var of this call and whether it is set. Vars live as
// long as the plugin instance: on agenthost, one call.
func GetVar(key string) ([]byte, bool) {
	k := AllocBytes([]byte(key))
	return loadAndFree(extismVarGet(k.Offset))
}

// SetVar sets a var.
func SetVar(key string, val []byte) {
	k := AllocBytes([]byte(key))
	v := AllocBytes(val)
	extismVarSet(k.Offset, v.Offset)
}

// RemoveVar deletes a var.
func RemoveVar(key string) {
	k := AllocBytes([]byte(key))
	extismVarSet(k.Offset, 0)
}

// Log sends msg to the host's log at level.
func Log(level LogLevel, msg string) {
	m := AllocBytes([]byte(msg))
	switch level {
	case LogTrace:
		extismLogTrace(m.Offset)
	case LogDebug:
		extismLogDebug(m.Offset)
	case LogInfo:
		extismLogInfo(m.Offset)
	case LogWarn:
		extismLogWarn(m.Offset)
	default:
		extismLogError(m.Offset)
	}
}

// Fetch sends an HTTP request through the host, which checks it (and
// every redirect) against the tool's network grant. A refused or failed
// request stops the plugin (the host traps it, as Extism hosts do), so
// Fetch returns only responses; the call then fails with the host's code.
func Fetch(req HTTPRequest, body []byte) HTTPResponse {
	enc, err := json.Marshal(req)
	if err != nil {
		panic("pdk: encode http request: " + err.Error())
	}
	r := AllocBytes(enc)
	var bodyOff uint64
	if body != nil {
		bodyOff = AllocBytes(body).Offset
	}
	out, _ := loadAndFree(extismHTTPRequest(r.Offset, bodyOff))
	resp := HTTPResponse{Status: int(extismHTTPStatusCode()), Body: out}
	if hb, ok := loadAndFree(extismHTTPHeaders()); ok {
		_ = json.Unmarshal(hb, &resp.Headers)
	}
	return resp
}

// Handle runs a typed entry point: it decodes the input JSON into In,
// calls fn, and encodes its result as the output. It returns the code the
// entry point should return: 0 on success, 1 after setting the error.
//
//	//go:wasmexport call
//	func call() int32 { return pdk.Handle(run) }
func Handle[In, Out any](fn func(In) (Out, error)) int32 {
	var in In
	if err := InputJSON(&in); err != nil {
		SetError(err)
		return 1
	}
	out, err := fn(in)
	if err != nil {
		SetError(err)
		return 1
	}
	if err := OutputJSON(out); err != nil {
		SetError(err)
		return 1
	}
	return 0
}
