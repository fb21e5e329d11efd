package registry_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/registry"
)

func ExampleRegistry_LoadDir() {
	r := registry.New()
	n, failures := r.LoadDir(filepath.Join("testdata", "packs"))
	fmt.Println(n, "tools loaded,", len(failures), "failures")
	for _, t := range r.Tools() {
		fmt.Println(t.ToolID, t.Version)
	}
	// Output:
	// 5 tools loaded, 4 failures
	// core:echo 2.0.0
	// py:hello 1.0.0
	// text:stats 1.0.0
	// text:word-count 0.1.0
}

func ExampleRegistry_Lookup() {
	r := registry.New()
	r.LoadDir(filepath.Join("testdata", "packs"))
	t, _ := r.Lookup("core:echo@1.0.0")
	fmt.Println(t.ToolID, t.Version)
	_, err := r.Lookup("text:wordcount")
	fmt.Println(err)
	_, err = r.Lookup("core:echo@9.9.9")
	fmt.Println(err)
	// Output:
	// core:echo 1.0.0
	// UNKNOWN_TOOL: unknown tool 'text:wordcount'; did you mean 'text:word-count'?
	// UNKNOWN_TOOL: unknown version '9.9.9' of tool 'core:echo'; available: 1.0.0, 2.0.0
}

func ExampleRegistry_Add() {
	r := registry.New()
	err := r.Add(&manifest.Tool{
		ToolID: "game:player", DisplayName: "Player", Description: "Looks up a player by id.", Version: "1.0.0",
		Handler:    manifest.Handler{Type: manifest.HandlerServiceMethod, ServiceName: "Game", MethodName: "Player"},
		Parameters: json.RawMessage(`{"type": "object", "properties": {"player_id": {"type": "integer"}}}`),
	})
	fmt.Println(err)
	fmt.Println(len(r.Filter("game", "")))
	// Output:
	// <nil>
	// 1
}
