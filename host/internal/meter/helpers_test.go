package meter_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/internal/meter"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// guestDir holds the Go guests built once by TestMain.
var guestDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "meter-guests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	guestDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// goGuest builds testdata/<name> with GOOS=wasip1 GOARCH=wasm (once per
// test binary) and returns the module bytes.
func goGuest(tb testing.TB, name string) []byte {
	tb.Helper()
	out := filepath.Join(guestDir, name+".wasm")
	if b, err := os.ReadFile(out); err == nil {
		return b
	}
	cmd := exec.Command("go", "build", "-o", out, "./testdata/"+name)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build guest %s: %v\n%s", name, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func instrument(tb testing.TB, wasm []byte) []byte {
	tb.Helper()
	out, err := meter.Instrument(wasm)
	if err != nil {
		tb.Fatalf("Instrument: %v", err)
	}
	return out
}

// newRuntime returns a runtime with WASI, the meter host module and an
// "env" module whose log function discards its argument.
func newRuntime(tb testing.TB, cfg wazero.RuntimeConfig) wazero.Runtime {
	tb.Helper()
	ctx := context.Background()
	if cfg == nil {
		cfg = wazero.NewRuntimeConfig()
	}
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	tb.Cleanup(func() { _ = r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	if err := meter.NewHostModule(ctx, r); err != nil {
		tb.Fatal(err)
	}
	_, err := r.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(context.Context, []uint64) {}), []api.ValueType{api.ValueTypeI32}, nil).
		Export("log").Instantiate(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func compile(tb testing.TB, r wazero.Runtime, wasm []byte) wazero.CompiledModule {
	tb.Helper()
	c, err := r.CompileModule(context.Background(), wasm)
	if err != nil {
		tb.Fatalf("compile: %v", err)
	}
	return c
}

// command runs a WASI command with args and returns its stdout and the
// instantiation error.
func command(ctx context.Context, r wazero.Runtime, c wazero.CompiledModule, cfg wazero.ModuleConfig, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	if cfg == nil {
		cfg = wazero.NewModuleConfig()
	}
	cfg = cfg.WithName("").WithStdout(&stdout).WithStderr(&stderr).WithArgs(append([]string{"guest"}, args...)...)
	mod, err := r.InstantiateModule(ctx, c, cfg)
	if mod != nil {
		_ = mod.Close(ctx)
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("%w (stderr: %s)", err, stderr.String())
	}
	return stdout.String(), nil
}

// call instantiates c (no start function) and calls its export fn.
func call(ctx context.Context, r wazero.Runtime, c wazero.CompiledModule, fn string, params ...uint64) ([]uint64, error) {
	mod, err := r.InstantiateModule(ctx, c, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		return nil, err
	}
	defer mod.Close(ctx)
	return mod.ExportedFunction(fn).Call(ctx, params...)
}
