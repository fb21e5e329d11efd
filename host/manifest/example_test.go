package manifest_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/manifest"
)

func ExampleParse() {
	data := []byte(`{
		"toolId": "text:stats", "displayName": "Stats", "description": "Counts words.",
		"version": "1.0.0",
		"handler": {"type": "wasm", "module": "stats.wasm", "abi": "extism"},
		"parameters": {"type": "object", "additionalProperties": false, "properties": {"text": {"type": "string"}}}
	}`)
	t, err := manifest.Parse(data, "toolpacks/text/stats.tool.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.ToolID, t.Version, t.Handler.ABI, t.Handler.EntryPoint, t.Handler.OutputFormat)
	fmt.Println(t.ParametersSchema().Validate(map[string]any{"txt": "hello"}))
	// Output:
	// text:stats 1.0.0 extism call json
	// INVALID_ARGUMENTS: unknown parameter 'txt', did you mean 'text'?
}

func ExampleParse_error() {
	_, err := manifest.Parse([]byte(`{"toolId": "text:stats", "displayName": "Stats", "description": "Counts words.",
		"version": "1.0", "handler": {"type": "wasm", "module": "stats.wasm", "abi": "extism"}}`), "/packs/stats.tool.json")
	var me *manifest.Error
	if errors.As(err, &me) {
		fmt.Println(me.Path, me.Pointer)
	}
	fmt.Println(errors.Is(err, abi.ErrLoadError))
	// Output:
	// /packs/stats.tool.json /version
	// true
}

func ExampleLoad() {
	t, err := manifest.Load("testdata/echo/echo.tool.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.ToolID, filepath.Base(t.ModulePath()), t.Digest() == t.Handler.SHA256)
	// Output: core:echo echo.wasm true
}

func ExampleWriteDigest() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "m.wasm"), []byte("module"), 0o644)
	p := filepath.Join(dir, "m.tool.json")
	_ = os.WriteFile(p, []byte(`{"toolId": "x:m", "displayName": "M", "description": "d", "version": "1.0.0",
  "handler": {"type": "wasm", "module": "m.wasm", "abi": "wasi-command", "sha256": "`+
		"0000000000000000000000000000000000000000000000000000000000000000"+`"}}`), 0o644)
	changed, err := manifest.WriteDigest(p)
	fmt.Println(changed, err)
	b, _ := os.ReadFile(p)
	fmt.Println(string(b))
	// Output:
	// true <nil>
	// {"toolId": "x:m", "displayName": "M", "description": "d", "version": "1.0.0",
	//   "handler": {"type": "wasm", "module": "m.wasm", "abi": "wasi-command", "sha256": "120970d812836f19888625587a4606a5ad23cef31c8684e601771552548fc6b9"}}
}

func ExampleSplitID() {
	fmt.Println(manifest.SplitID("text:word-count"))
	fmt.Println(manifest.ValidID("Text:WordCount"))
	// Output:
	// text word-count <nil>
	// tool id "Text:WordCount": namespace must start with a lower-case letter, not 'T'
}

func ExampleCompareVersions() {
	fmt.Println(manifest.CompareVersions("1.10.0", "1.9.0"), manifest.CompareVersions("2.0.0-rc.1", "2.0.0"))
	// Output: 1 -1
}
