package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
)

// TestSoak is the soak of `make soak` (skipped unless AGENTHOST_SOAK=1):
// mixed concurrent calls (WASM, Extism, a script), caller cancels, tool
// timeouts, bad arguments, Close while calls run, and 50 New/Close
// cycles, for AGENTHOST_SOAK_DURATION (default 2m). It fails on any
// INTERNAL code or panic, and when goroutines, open descriptors or the
// entries of TMPDIR are not back to their baseline at the end. It prints
// its figures.
func TestSoak(t *testing.T) {
	if os.Getenv("AGENTHOST_SOAK") != "1" {
		t.Skip("set AGENTHOST_SOAK=1 (make soak)")
	}
	dur := 2 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("AGENTHOST_SOAK_DURATION")); err == nil {
		dur = d
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("soak test notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	all := []string{hosttest.Toolpacks(t), sleepPack(t, 200), commandPack(t)}
	// The short-lived hosts load a small pack: each New prepares its
	// tools again, and the point is Close during calls, not compiling.
	small := []string{filepath.Join(hosttest.Toolpacks(t), "core"), filepath.Join(hosttest.Toolpacks(t), "text"), all[1], all[2]}
	pol := hosttest.Policy(t, "workspace: "+ws)
	newHost := func(dirs ...string) *host.Host {
		h, err := host.New(context.Background(), host.Options{Dirs: dirs, Policy: pol, CacheDir: hosttest.CacheDir(t)})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// Warm the disk caches, then take the baseline.
	warm := newHost(all...)
	warm.Call(context.Background(), "core:echo", nil)
	warm.Call(context.Background(), "cmd:echo", nil) // its module is compiled apart
	warm.Close(context.Background())
	time.Sleep(200 * time.Millisecond)
	baseG, baseFD, baseTmp := runtime.NumGoroutine(), openFDs(), tmpEntries(tmp)

	calls := []struct{ id, args string }{
		{"core:echo", `{"a":1}`},
		{"cmd:echo", `{"a":1}`}, // a parked command
		{"text:stats", `{"text":"one two three"}`},
		{"json:query", `{"filter":".a","input":{"a":2}}`},
		{"hash:digest", `{"text":"x"}`},
		{"fs:read", `{"path":"notes.txt"}`},
		{"fs:read", `{"path":"../../etc/passwd"}`},
		{"fs:list", `{"path":"."}`},
		{"web:extract-links", `{"html":"<a href='https://example.com/'>x</a>","baseUrl":"https://example.com/"}`},
		{"py:markdown-outline", `{"markdown":"# a\n## b"}`},
		{"t:sleep", `{}`},               // TIMEOUT after 200 ms
		{"t:sleep", `{"benign":true}`},  // echoes
		{"text:stats", `{"txt":"bad"}`}, // INVALID_ARGUMENTS
		{"nope:tool", `{}`},             // UNKNOWN_TOOL
	}
	var (
		mu     sync.Mutex
		codes  = map[string]int{}
		total  atomic.Int64
		panics atomic.Int64
	)
	record := func(env abi.Envelope) {
		total.Add(1)
		c := "success"
		if env.Error != nil {
			c = string(env.Error.Code)
		}
		mu.Lock()
		codes[c]++
		mu.Unlock()
	}
	worker := func(ctx context.Context, h *host.Host, seed uint64) {
		defer func() {
			if r := recover(); r != nil {
				panics.Add(1)
				t.Errorf("panic: %v", r)
			}
		}()
		rng := rand.New(rand.NewPCG(seed, 7))
		for ctx.Err() == nil {
			c := calls[rng.IntN(len(calls))]
			cctx, cancel := context.WithCancel(ctx)
			if rng.IntN(10) == 0 { // a caller that gives up
				time.AfterFunc(time.Duration(rng.IntN(20))*time.Millisecond, cancel)
			}
			env := h.Call(cctx, c.id, json.RawMessage(c.args))
			cancel()
			if env.Error != nil && strings.Contains(env.Error.Message, "host was closed") {
				record(env)
				return // this host is gone
			}
			record(env)
		}
	}
	start := time.Now()
	ctx, stop := context.WithTimeout(context.Background(), dur)
	defer stop()
	var wg sync.WaitGroup
	main := newHost(all...)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); worker(ctx, main, uint64(i)) }()
	}
	// Close while calls run, every second, on short-lived hosts; the
	// first 50 rounds are also the New/Close cycles.
	cycles := 0
	for ctx.Err() == nil {
		h := newHost(small...)
		hctx, hstop := context.WithCancel(ctx)
		var hw sync.WaitGroup
		for i := 0; i < 2; i++ {
			hw.Add(1)
			go func() { defer hw.Done(); worker(hctx, h, uint64(1000+cycles*2+i)) }()
		}
		time.Sleep(time.Duration(100+cycles%5*100) * time.Millisecond)
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		hstop()
		hw.Wait()
		cycles++
	}
	wg.Wait()
	main.Close(context.Background())
	elapsed := time.Since(start)

	// Let finished goroutines and descriptors settle.
	var g, fd, te int
	for i := 0; i < 50; i++ {
		runtime.GC()
		g, fd, te = runtime.NumGoroutine(), openFDs(), tmpEntries(tmp)
		if g <= baseG+2 && fd <= baseFD+2 && te <= baseTmp {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var keys []string
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, codes[k]))
	}
	t.Logf("soak: %d calls in %s (%.0f calls/s), %d New/Close cycles with Close during calls; %s",
		total.Load(), elapsed.Round(time.Second), float64(total.Load())/elapsed.Seconds(), cycles, strings.Join(parts, ", "))
	t.Logf("soak: goroutines %d -> %d, descriptors %d -> %d, TMPDIR entries %d -> %d, panics %d",
		baseG, g, baseFD, fd, baseTmp, te, panics.Load())
	if codes[string(abi.CodeInternal)] > 0 {
		t.Errorf("%d INTERNAL results", codes[string(abi.CodeInternal)])
	}
	if cycles < 50 && dur >= time.Minute {
		t.Errorf("only %d New/Close cycles", cycles)
	}
	if g > baseG+2 || fd > baseFD+2 || te > baseTmp {
		for _, e := range fdTargets() {
			t.Log("open:", e)
		}
		t.Errorf("not back to baseline: goroutines %d (was %d), descriptors %d (was %d), TMPDIR entries %d (was %d)", g, baseG, fd, baseFD, te, baseTmp)
	}
}

// openFDs counts the process's open descriptors, less the user
// namespaces the script bridge keeps open for the life of the process (one
// per per-call uid, for idmapped mounts).
func openFDs() int {
	n := 0
	for _, e := range fdTargets() {
		if !strings.Contains(e, "-> user:[") {
			n++
		}
	}
	return n
}

func tmpEntries(dir string) int {
	ents, _ := os.ReadDir(dir)
	return len(ents)
}

func fdTargets() []string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+" -> "+l)
	}
	return out
}
