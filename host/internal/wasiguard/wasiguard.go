// Package wasiguard instantiates wazero's WASI preview 1 host module with
// bounds on the sizes a guest chooses before the host allocates for them.
//
// wazero's fd_renumber(from, to) grows the descriptor table up to index
// to: a guest calling fd_renumber(fd, 0x7fffffff) made the host allocate
// 16 GiB and die. Here fd_renumber refuses a target descriptor at or above
// MaxFD with EBADF (as wasmtime does for a descriptor that is not open),
// and otherwise runs wazero's own implementation.
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

// Instantiate adds the guarded wasi_snapshot_preview1 module to rt, like
// wasi_snapshot_preview1.Instantiate.
func Instantiate(ctx context.Context, rt wazero.Runtime) (api.Closer, error) {
	orig, err := original(ctx, rt, fdRenumber)
	if err != nil {
		return nil, err
	}
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
	return b.Instantiate(ctx)
}

// original returns wazero's implementation of the WASI function name, read
// from a compiled (never instantiated) copy of the module.
func original(ctx context.Context, rt wazero.Runtime, name string) (api.GoModuleFunction, error) {
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	cm, err := b.Compile(ctx)
	if err != nil {
		return nil, fmt.Errorf("wasi: %w", err)
	}
	defer cm.Close(ctx)
	def, ok := cm.ExportedFunctions()[name]
	if !ok {
		return nil, fmt.Errorf("wasi: wazero exports no %s", name)
	}
	fn, ok := def.GoFunction().(api.GoModuleFunction)
	if !ok {
		return nil, fmt.Errorf("wasi: %s is a %T, not a Go module function", name, def.GoFunction())
	}
	return fn, nil
}
