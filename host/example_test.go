package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/manifest"
)

// toolpacks is the repository's toolpacks folder (built by `make toolpacks`).
func toolpacks() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "toolpacks")
}

func ExampleHost_Call() {
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Dirs: []string{toolpacks()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close(ctx)
	env := h.Call(ctx, "core:echo", json.RawMessage(`{"greeting":"hello"}`))
	fmt.Println(env.Status, string(env.Output))
	// Output:
	// success {"greeting":"hello"}
}

func ExampleHost_Exec() {
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Dirs: []string{toolpacks()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close(ctx)
	turn := h.Exec(ctx, `I will echo the names.
<ACTION>
  <core:echo><names><item>Alice</item><item>Bob</item></names></core:echo>
  <core:ecko/>
</ACTION>`)
	fmt.Println(turn.ResponseText)
	fmt.Println(turn.Status)
	fmt.Println(turn.Observation)
	// Output:
	// I will echo the names.
	// partial
	// Observation: Tool core:echo executed successfully. Result: {"names":["Alice","Bob"]}
	// Observation: Error - Unknown tool 'core:ecko'; did you mean 'core:echo'?
}

// ExampleFunc registers a Go function as a tool: its schemas come from
// the Go types, and calls are validated like any tool's.
func ExampleFunc() {
	type args struct {
		City string `json:"city" jsonschema:"the city name"`
	}
	type weather struct {
		City string `json:"city"`
		Temp int    `json:"tempC"`
	}
	forecast := host.Func(host.FuncSpec{ID: "weather:now", Description: "Current temperature in a city."},
		func(ctx context.Context, a args) (weather, error) {
			return weather{City: a.City, Temp: 21}, nil
		})
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Tools: []host.Tool{forecast}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close(ctx)
	env := h.Call(ctx, "weather:now", json.RawMessage(`{"city":"Lyon"}`))
	fmt.Println(env.Status, string(env.Output))
	env = h.Call(ctx, "weather:now", json.RawMessage(`{}`))
	fmt.Println(env.Status, env.Error.Code)
	// Output:
	// success {"city":"Lyon","tempC":21}
	// failure INVALID_ARGUMENTS
}

// ExampleFuncSpec describes a Go tool the way a manifest file describes
// one on disk: tags, a worked example, safe retries and what it may read.
// The policy's ceiling still applies to the file access it requests.
func ExampleFuncSpec() {
	type args struct {
		Name string `json:"name"`
	}
	size := host.Func(host.FuncSpec{
		ID:          "notes:size",
		Description: "The size in bytes of a workspace file.",
		Version:     "1.2.0",
		Tags:        []string{"notes", "read-only"},
		Examples: []manifest.Example{
			{Description: "The size of todo.md", Input: json.RawMessage(`{"name":"todo.md"}`)},
		},
		SecurityContext: &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowRead: []string{"notes/**"}}},
		Idempotent:      true,
	}, func(ctx context.Context, a args) (int, error) {
		b, err := fs.ReadFile(host.FS(ctx), "notes/"+a.Name)
		return len(b), err
	})
	m := size.Manifest()
	fmt.Println(m.ToolID, m.Version, m.Tags, m.Idempotent, m.SecurityContext.FileAccess.AllowRead)
	// Output:
	// notes:size 1.2.0 [notes read-only] true [notes/**]
}
