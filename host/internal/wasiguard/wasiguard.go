// Package wasiguard instantiates wazero's WASI preview 1 host module with
// bounds on the sizes a guest chooses before the host allocates for them.
//
// wazero's fd_renumber(from, to) grows the descriptor table up to index
// to: a guest calling fd_renumber(fd, 0x7fffffff) made the host allocate
// 16 GiB and die. Here fd_renumber refuses a target descriptor at or above
// MaxFD with EBADF (as wasmtime does for a descriptor that is not open),
// and otherwise runs wazero's own implementation.
//
// A runner may also take over fd_read and proc_exit of one call through
// [WithHooks]: the wasm runner parks a command at its first read of
// stdin and serves later calls from there.
package wasiguard

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// MaxFD bounds the descriptor numbers a guest may create with
// fd_renumber. Preopens and opened files take the lowest free numbers, so
// real programs stay far below it.
const MaxFD = 1 << 12

// fdRenumber is the WASI function guarded here.
const fdRenumber = "fd_renumber"

// errnoBadf is WASI's EBADF.
const errnoBadf = 8

// The WASI functions a Hooks value may take over.
const (
	fdRead   = "fd_read"
	procExit = "proc_exit"
)

// Hooks takes over fd_read and proc_exit for the guest calls whose
// context carries it (WithHooks). Each method gets the guest's stack as
// wazero passes it to the WASI function; it returns true when it handled
// the call (stack[0] holding fd_read's errno), false to run wazero's own
// implementation. A method may also not return at all (a panic that ends
// the guest, or a snapshot restore).
type Hooks interface {
	Read(ctx context.Context, mod api.Module, stack []uint64) bool
	Exit(ctx context.Context, mod api.Module, stack []uint64) bool
}

type hooksKey struct{}

// WithHooks returns a context that makes the WASI functions of the guest
// call it is passed to consult h first.
func WithHooks(ctx context.Context, h Hooks) context.Context {
	return context.WithValue(ctx, hooksKey{}, h)
}

// hooked wraps wazero's implementation of a WASI function with method,
// a Hooks method (Hooks.Read or Hooks.Exit) of the context's Hooks.
func hooked(orig api.GoModuleFunction, method func(Hooks, context.Context, api.Module, []uint64) bool) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		if h, ok := ctx.Value(hooksKey{}).(Hooks); ok && method(h, ctx, mod, stack) {
			return
		}
		orig.Call(ctx, mod, stack)
	}
}

// Instantiate adds the guarded wasi_snapshot_preview1 module to rt, like
// wasi_snapshot_preview1.Instantiate.
func Instantiate(ctx context.Context, rt wazero.Runtime) (api.Closer, error) {
	fns, err := originals(ctx, rt, fdRenumber, fdRead, procExit)
	if err != nil {
		return nil, err
	}
	orig, read, exit := fns[0], fns[1], fns[2]
	i32 := api.ValueTypeI32
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
			if to := int64(int32(stack[1])); to < 0 || to >= MaxFD {
				stack[0] = errnoBadf
				return
			}
			orig.Call(ctx, mod, stack)
		}), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).
		WithParameterNames("fd", "to").
		Export(fdRenumber)
	b.NewFunctionBuilder().
		WithGoModuleFunction(hooked(read, Hooks.Read),
			[]api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("fd", "iovs", "iovs_len", "result.nread").
		Export(fdRead)
	b.NewFunctionBuilder().
		WithGoModuleFunction(hooked(exit, Hooks.Exit),
			[]api.ValueType{i32}, nil).
		WithParameterNames("rval").
		Export(procExit)
	return b.Instantiate(ctx)
}

// originals returns wazero's implementations of the WASI functions
// names, read from a compiled (never instantiated) copy of the module.
func originals(ctx context.Context, rt wazero.Runtime, names ...string) ([]api.GoModuleFunction, error) {
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	cm, err := b.Compile(ctx)
	if err != nil {
		return nil, fmt.Errorf("wasi: %w", err)
	}
	defer cm.Close(ctx)
	out := make([]api.GoModuleFunction, len(names))
	for i, name := range names {
		def, ok := cm.ExportedFunctions()[name]
		if !ok {
			return nil, fmt.Errorf("wasi: wazero exports no %s", name)
		}
		fn, ok := def.GoFunction().(api.GoModuleFunction)
		if !ok {
			return nil, fmt.Errorf("wasi: %s is a %T, not a Go module function", name, def.GoFunction())
		}
		out[i] = fn
	}
	return out, nil
}
