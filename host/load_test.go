package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
)

// echoPack copies the core pack (echo) into a folder a test may edit.
func echoPack(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(hosttest.Toolpacks(t), "core")
	for _, f := range []string{"echo.tool.json", "echo.wasm"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// editDescription rewrites the echo manifest's description.
func editDescription(t *testing.T, dir, desc string) {
	t.Helper()
	p := filepath.Join(dir, "echo.tool.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["description"] = desc
	b, _ = json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReloadUnderLoad reloads a changed tool 10 times while 4 goroutines
// call it: no call fails, and the replaced versions' pools are freed (the
// goroutine count comes back).
func TestReloadUnderLoad(t *testing.T) {
	dir := echoPack(t)
	h := hosttest.NewHost(t, nil, dir)
	ctx := context.Background()
	if env := h.Call(ctx, "core:echo", json.RawMessage(`{"a":1}`)); env.Status != abi.StatusSuccess {
		t.Fatal(env.Error)
	}
	time.Sleep(100 * time.Millisecond)
	base := runtime.NumGoroutine()
	var calls, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				env := h.Call(ctx, "core:echo", json.RawMessage(`{"n":1}`))
				calls.Add(1)
				if env.Status != abi.StatusSuccess {
					failed.Add(1)
					t.Errorf("call during reload: %v", env.Error)
				}
			}
		}()
	}
	for i := 0; i < 10; i++ {
		editDescription(t, dir, "Echo, version "+string(rune('a'+i))+".")
		if err := h.Reload(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if tl, _ := h.Tool("core:echo"); tl.Description != "Echo, version j." {
		t.Fatalf("description %q after the reloads", tl.Description)
	}
	var g int
	for i := 0; i < 50; i++ {
		g = runtime.NumGoroutine()
		if g <= base+2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if g > base+2 {
		t.Errorf("goroutines %d after 10 reloads, %d before: the old versions' pools were not freed", g, base)
	}
	t.Logf("%d calls during 10 reloads, %d failed", calls.Load(), failed.Load())
}

// TestReloadSemantics pins the rest of the live catalogue: an unchanged
// reload is a no-op (same tool, no event), a reload whose manifest no
// longer loads keeps the previous version and returns the LOAD_ERROR,
// Unload removes the folder's tools, Load of the same folder twice is not
// a duplicate, and subscribers hear of each change.
func TestReloadSemantics(t *testing.T) {
	dir := echoPack(t)
	h := hosttest.NewHost(t, nil, dir)
	var mu sync.Mutex
	var events []host.Change
	cancel := h.Subscribe(func(c host.Change) { mu.Lock(); events = append(events, c); mu.Unlock() })
	defer cancel()
	ctx := context.Background()
	before, _ := h.Tool("core:echo")

	if err := h.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := h.Load(dir); err != nil {
		t.Fatal(err)
	}
	if after, _ := h.Tool("core:echo"); after != before || len(events) != 0 {
		t.Fatalf("an unchanged reload replaced the tool or sent %v", events)
	}

	if err := os.WriteFile(filepath.Join(dir, "echo.tool.json"), []byte(`{"toolId": "core:echo", broken`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := h.Reload()
	if err == nil || !strings.Contains(err.Error(), "kept the previous version") {
		t.Fatalf("a failing reload: %v", err)
	}
	if env := h.Call(ctx, "core:echo", json.RawMessage(`{"x":1}`)); env.Status != abi.StatusSuccess {
		t.Fatalf("the previous version stopped working: %v", env.Error)
	}

	if err := h.Unload(dir); err != nil {
		t.Fatal(err)
	}
	if env := h.Call(ctx, "core:echo", nil); code(env) != abi.CodeUnknownTool {
		t.Fatalf("after Unload: %v", env.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) < 2 || len(events[len(events)-1].Removed) != 1 {
		t.Fatalf("events %+v", events)
	}
}

// TestUnregisterDuringCall pins that a call in flight finishes when its
// tool is unregistered, and the next call is UNKNOWN_TOOL.
func TestUnregisterDuringCall(t *testing.T) {
	h := hosttest.NewHost(t, nil)
	started, release := make(chan struct{}), make(chan struct{})
	slow := host.Func(host.FuncSpec{ID: "app:slow", Description: "Waits to be released."}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-release
		return "done", nil
	})
	if err := h.Register(slow); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res := make(chan abi.Envelope, 1)
	go func() { res <- h.Call(ctx, "app:slow", nil) }()
	<-started
	if err := h.Unregister("app:slow"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if env := <-res; env.Status != abi.StatusSuccess || string(env.Output) != `"done"` {
		t.Fatalf("the call in flight: %v %s", env.Error, env.Output)
	}
	if env := h.Call(ctx, "app:slow", nil); code(env) != abi.CodeUnknownTool {
		t.Fatalf("after Unregister: %v", env.Error)
	}
}

// TestWatch pins the file watcher: editing a manifest under a loaded
// folder reloads it (debounced) and subscribers hear of it.
func TestWatch(t *testing.T) {
	dir := echoPack(t)
	h := hosttest.NewHost(t, nil, dir)
	changed := make(chan host.Change, 4)
	defer h.Subscribe(func(c host.Change) { changed <- c })()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.Watch(ctx, 50*time.Millisecond, nil) }()
	time.Sleep(100 * time.Millisecond) // let the watcher start
	editDescription(t, dir, "Echo, edited on disk.")
	select {
	case c := <-changed:
		if len(c.Changed) != 1 || !strings.HasPrefix(c.Changed[0], "core:echo@") {
			t.Fatalf("change %+v", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reload after the manifest changed")
	}
	if tl, _ := h.Tool("core:echo"); tl.Description != "Echo, edited on disk." {
		t.Fatalf("description %q", tl.Description)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
