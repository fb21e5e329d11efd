package extism_test

import (
	"context"
	"strings"
	"testing"

	extismsdk "github.com/extism/go-sdk"
)

// TestGoSDKCannotShadowHTTP pins the reason this runner defines
// extism:host/env itself (docs/ABI.md, "## extism"): go-sdk v1.7.1
// builds that module inside NewCompiledPlugin, so a host function meant
// to replace its http_request cannot be registered under the same
// module. If go-sdk ever allows it, this test fails and the decision
// should be revisited.
func TestGoSDKCannotShadowHTTP(t *testing.T) {
	ctx := context.Background()
	shadow := extismsdk.NewHostFunctionWithStack("http_request",
		func(context.Context, *extismsdk.CurrentPlugin, []uint64) {},
		[]extismsdk.ValueType{extismsdk.ValueTypeI64, extismsdk.ValueTypeI64},
		[]extismsdk.ValueType{extismsdk.ValueTypeI64})
	shadow.SetNamespace("extism:host/env")
	manifest := extismsdk.Manifest{Wasm: []extismsdk.Wasm{extismsdk.WasmFile{Path: thirdParty + "/hello.wasm"}}}
	c, err := extismsdk.NewCompiledPlugin(ctx, manifest, extismsdk.PluginConfig{}, []extismsdk.HostFunction{shadow})
	if err == nil {
		c.Close(ctx)
		t.Fatal("go-sdk accepted a host function shadowing extism:host/env.http_request")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "extism:host/env") {
		t.Fatalf("unexpected error: %v", err)
	}
}
