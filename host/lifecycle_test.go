package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
)

// sleepPack makes a toolpack with the sleep guest (it sleeps on {} and
// echoes {"benign":true}) under a timeout of timeoutMs.
func sleepPack(t *testing.T, timeoutMs int) string {
	t.Helper()
	dir := t.TempDir()
	mod, err := os.ReadFile(filepath.Join(hosttest.Root(t), "testdata", "guests", "sleep", "sleep.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sleep.wasm"), mod, 0o644); err != nil {
		t.Fatal(err)
	}
	m := `{"toolId":"t:sleep","displayName":"Sleep","description":"Sleeps on {}.","version":"1.0.0",
	"handler":{"type":"wasm","abi":"wasi-command","module":"sleep.wasm"},
	"securityContext":{"limits":{"timeoutMs":` + itoa(timeoutMs) + `}}}`
	if err := os.WriteFile(filepath.Join(dir, "sleep.tool.json"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// commandPack returns a toolpack folder holding cmd:echo: the guest SDK's
// echo plugin built as a plain wasi command (not the toolpack's reactor
// build), with core:echo's manifest. Its pooled instances are parked
// commands.
func commandPack(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	wasmPath := filepath.Join(dir, "echo.wasm")
	build := exec.Command("go", "build", "-trimpath", "-o", wasmPath, "./plugins/echo")
	build.Dir = hosttest.Root(t)
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build echo command: %v\n%s", err, out)
	}
	wasmBytes, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatal(err)
	}
	man, err := os.ReadFile(filepath.Join(hosttest.Toolpacks(t), "core", "echo.tool.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(man, &m); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(wasmBytes)
	m["toolId"] = "cmd:echo"
	m["handler"].(map[string]any)["sha256"] = hex.EncodeToString(sum[:])
	man, _ = json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "echo.tool.json"), man, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func code(env abi.Envelope) abi.Code {
	if env.Error == nil {
		return ""
	}
	return env.Error.Code
}

// TestCallerCancelAndDeadlines pins the codes of a call that does not end
// on its own: the caller's cancel is CANCELLED (it was INTERNAL with an
// ERROR log), the caller's deadline is TIMEOUT naming the caller, and the
// tool's own limit is TIMEOUT naming timeoutMs (it named the tool's limit
// for a caller deadline after 32 ms).
func TestCallerCancelAndDeadlines(t *testing.T) {
	h := hosttest.NewHost(t, nil, sleepPack(t, 2000))
	ctx := context.Background()
	if env := h.Call(ctx, "t:sleep", json.RawMessage(`{"benign":true}`)); env.Status != abi.StatusSuccess {
		t.Fatalf("warm-up call: %+v", env.Error)
	}
	t.Run("cancel", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(50*time.Millisecond, cancel)
		env := h.Call(cctx, "t:sleep", json.RawMessage(`{}`))
		if code(env) != abi.CodeCancelled || !strings.Contains(env.Error.Message, "caller cancelled") {
			t.Fatalf("got %+v, want CANCELLED by the caller", env.Error)
		}
	})
	t.Run("caller deadline", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		env := h.Call(cctx, "t:sleep", json.RawMessage(`{}`))
		if code(env) != abi.CodeTimeout || !strings.Contains(env.Error.Message, "caller's deadline") || !strings.Contains(env.Error.Message, "2000 ms") {
			t.Fatalf("got %+v, want TIMEOUT naming the caller's deadline and the tool's limit", env.Error)
		}
	})
	t.Run("tool limit", func(t *testing.T) {
		h := hosttest.NewHost(t, nil, sleepPack(t, 100))
		env := h.Call(ctx, "t:sleep", json.RawMessage(`{}`))
		if code(env) != abi.CodeTimeout || !strings.Contains(env.Error.Message, "timeoutMs limit of 100 ms") {
			t.Fatalf("got %+v, want TIMEOUT naming timeoutMs", env.Error)
		}
	})
	if env := h.Call(ctx, "t:sleep", json.RawMessage(`{"benign":true}`)); env.Status != abi.StatusSuccess {
		t.Fatalf("the host no longer serves: %+v", env.Error)
	}
}

// TestPreparationNotTiedToFirstCaller pins that concurrent first calls
// share a preparation that belongs to the host: the first caller giving up
// does not fail the others (20 of 40 runs gave LOAD_ERROR before).
func TestPreparationNotTiedToFirstCaller(t *testing.T) {
	for i := 0; i < 3; i++ {
		// The shared test cache: preparation reads the compiled module from
		// disk but still instantiates and snapshots it, so it takes long
		// enough for the first caller to give up in the middle.
		h, err := host.New(context.Background(), host.Options{Dirs: []string{hosttest.Toolpacks(t)}, CacheDir: hosttest.CacheDir(t)})
		if err != nil {
			t.Fatal(err)
		}
		first, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var firstEnv, secondEnv abi.Envelope
		wg.Add(2)
		go func() { defer wg.Done(); firstEnv = h.Call(first, "core:echo", json.RawMessage(`{"n":1}`)) }()
		time.Sleep(time.Millisecond)
		go func() {
			defer wg.Done()
			secondEnv = h.Call(context.Background(), "core:echo", json.RawMessage(`{"n":2}`))
		}()
		time.Sleep(3 * time.Millisecond)
		cancel()
		wg.Wait()
		if secondEnv.Status != abi.StatusSuccess {
			t.Fatalf("run %d: the uncancelled caller failed: %+v", i, secondEnv.Error)
		}
		if firstEnv.Status != abi.StatusSuccess && code(firstEnv) != abi.CodeCancelled {
			t.Fatalf("run %d: the cancelled caller got %+v, want CANCELLED (or success)", i, firstEnv.Error)
		}
		h.Close(context.Background())
	}
}

// TestCloseDuringCallsAndPreparation pins Close while calls run and tools
// are being prepared: every caller gets an envelope (CANCELLED or a
// result), never a panic, and calls after Close are CANCELLED (a wazero
// panic escaped the preparation and later calls nil-dereferenced).
func TestCloseDuringCallsAndPreparation(t *testing.T) {
	cache := t.TempDir() // round 0 compiles from scratch, later rounds read the disk caches
	for round := 0; round < 2; round++ {
		dirs := []string{hosttest.Toolpacks(t), sleepPack(t, 5000)}
		h, err := host.New(context.Background(), host.Options{Dirs: dirs, CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		calls := []struct{ id, args string }{
			{"t:sleep", `{}`}, {"core:echo", `{"a":1}`}, {"json:query", `{"filter":"."}`},
		}
		var wg sync.WaitGroup
		envs := make(chan abi.Envelope, 4*len(calls))
		for i := 0; i < 2; i++ {
			for _, c := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					envs <- h.Call(context.Background(), c.id, json.RawMessage(c.args))
				}()
			}
		}
		time.Sleep(time.Duration(20+round*40) * time.Millisecond)
		closeCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := h.Close(closeCtx); err != nil {
			t.Fatalf("close: %v", err)
		}
		cancel()
		wg.Wait()
		close(envs)
		for env := range envs {
			switch code(env) {
			case "", abi.CodeCancelled:
			default:
				t.Errorf("round %d: %s got %s: %s", round, env.ToolID, env.Error.Code, env.Error.Message)
			}
		}
		if env := h.Call(context.Background(), "core:echo", nil); code(env) != abi.CodeCancelled {
			t.Fatalf("a call after Close got %+v, want CANCELLED", env.Error)
		}
		if err := h.Close(context.Background()); err != nil {
			t.Fatalf("second close: %v", err)
		}
	}
}

// TestParkedCommand: a plain Go command loaded by a host with its default
// pool budget answers exactly as the reactor build of the same plugin,
// most calls on parked instances, also from several goroutines at once.
func TestParkedCommand(t *testing.T) {
	h := hosttest.NewHost(t, nil, hosttest.Toolpacks(t), commandPack(t))
	ctx := context.Background()
	// Pools are the compiled tier's: with an empty cache the tools first
	// run on the interpreter (docs/POOLS.md, "Tiers").
	h.Warm(ctx, host.WarmOptions{Tools: []string{"cmd:echo", "core:echo"}})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 25 {
				args := json.RawMessage(`{"g":` + itoa(g) + `,"i":` + itoa(i) + `}`)
				cmd, reactor := h.Call(ctx, "cmd:echo", args), h.Call(ctx, "core:echo", args)
				if cmd.Error != nil || string(cmd.Output) != string(reactor.Output) || string(cmd.Output) != string(args) {
					t.Errorf("cmd:echo %s: %v %s, core:echo %s", args, cmd.Error, cmd.Output, reactor.Output)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, th := range h.Health() {
		if th.ID != "cmd:echo" {
			continue
		}
		if th.Pool == nil || th.Pool.Hits < 50 || th.Calls != 100 || th.Failures != 0 {
			t.Fatalf("cmd:echo: %d calls, %d failed, pool %+v: want most calls on parked instances", th.Calls, th.Failures, th.Pool)
		}
		return
	}
	t.Fatal("cmd:echo not loaded")
}
