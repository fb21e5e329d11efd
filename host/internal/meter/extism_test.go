package meter_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/internal/meter"
	extismsdk "github.com/extism/go-sdk"
)

// extismPlugins returns the prebuilt plugins shipped with the Extism Go
// SDK in the module cache.
func extismPlugins(tb testing.TB) []string {
	tb.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/extism/go-sdk").Output()
	if err != nil {
		tb.Fatalf("locate extism go-sdk: %v", err)
	}
	paths, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "wasm", "*.wasm"))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no extism plugins found: %v", err)
	}
	return paths
}

// extismFuncs registers the meter's host functions with the Extism SDK.
func extismFuncs() []extismsdk.HostFunction {
	var funcs []extismsdk.HostFunction
	for _, f := range meter.HostFuncs() {
		hf := extismsdk.NewHostFunctionWithStack(f.Name, func(ctx context.Context, _ *extismsdk.CurrentPlugin, stack []uint64) {
			f.Func(ctx, stack)
		}, f.Params, f.Results)
		hf.SetNamespace(meter.ImportModule)
		funcs = append(funcs, hf)
	}
	return funcs
}

func extismPlugin(tb testing.TB, wasm []byte, funcs []extismsdk.HostFunction) *extismsdk.Plugin {
	tb.Helper()
	ctx := context.Background()
	p, err := extismsdk.NewPlugin(ctx, extismsdk.Manifest{Wasm: []extismsdk.Wasm{extismsdk.WasmData{Data: wasm}}},
		extismsdk.PluginConfig{EnableWasi: true}, funcs)
	if err != nil {
		tb.Fatalf("new plugin: %v", err)
	}
	tb.Cleanup(func() { _ = p.Close(ctx) })
	return p
}

// TestExtism_sameOutput runs an Extism plugin through the SDK plain and
// instrumented, reading the fuel through the settle export, and checks
// that a fresh instance uses the same fuel. (The plugin keeps a running
// total in an Extism var, so a second call of one instance differs.)
func TestExtism_sameOutput(t *testing.T) {
	var wasm []byte
	for _, p := range extismPlugins(t) {
		if filepath.Base(p) == "count_vowels.wasm" {
			wasm = readFile(t, p)
		}
	}
	if wasm == nil {
		t.Fatal("count_vowels.wasm not found")
	}
	const input = "Hello, metered world!"
	_, want, err := extismPlugin(t, wasm, nil).Call("count_vowels", []byte(input))
	if err != nil {
		t.Fatal(err)
	}
	metered := instrument(t, wasm)
	var fuel []uint64
	for i := 0; i < 2; i++ {
		p := extismPlugin(t, metered, extismFuncs())
		b := &meter.Budget{}
		ctx := meter.WithBudget(context.Background(), b)
		_, got, err := p.CallWithContext(ctx, "count_vowels", []byte(input))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("instrumented %q, original %q", got, want)
		}
		if _, _, err := p.CallWithContext(ctx, meter.SettleExport, nil); err != nil {
			t.Fatalf("settle: %v", err)
		}
		fuel = append(fuel, b.Used())
	}
	if fuel[0] == 0 || fuel[0] != fuel[1] {
		t.Errorf("fuel %v: want equal and non-zero", fuel)
	}
	// A limit below the use stops the plugin with FUEL_EXHAUSTED.
	b := &meter.Budget{Fuel: fuel[0] / 2}
	_, _, err = extismPlugin(t, metered, extismFuncs()).CallWithContext(meter.WithBudget(context.Background(), b), "count_vowels", []byte(input))
	if err == nil || b.Err() == nil || b.Err().Code != "FUEL_EXHAUSTED" {
		t.Fatalf("err %v, budget err %v", err, b.Err())
	}
}
