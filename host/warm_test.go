package host_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
)

// TestWarm: Warm prepares the tools named (every WebAssembly tool when
// none is), each once; a pool budget too small for every tool leaves the
// later ones without an instance and says which.
func TestWarm(t *testing.T) {
	tp := hosttest.Toolpacks(t)
	dirs := []string{filepath.Join(tp, "core"), filepath.Join(tp, "text")}
	all := []string{"core:echo", "text:diff", "text:regex", "text:stats"}
	tests := []struct {
		name     string
		policy   string
		tools    []string
		want     int // tools warmed
		ready    int // of which with a ready instance
		noBudget int
	}{
		{"every tool", "", nil, 4, 4, 0},
		{"named, each once, unknown left out", "", []string{"text:stats", "text:stats@1.0.0", "no:such"}, 1, 1, 0},
		{"budget for one instance", "pool:\n  memoryMb: 1\n", nil, 4, 1, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var pol = hosttest.Policy(t, "workspace: .\n"+tc.policy)
			h := hosttest.NewHost(t, pol, dirs...)
			var progress []int
			rep := h.Warm(context.Background(), host.WarmOptions{Tools: tc.tools, Progress: func(done, total int) {
				if total != tc.want {
					t.Errorf("progress total %d, want %d", total, tc.want)
				}
				progress = append(progress, done)
			}})
			if rep.Tools != tc.want || len(rep.Ready) != tc.ready || len(rep.NoBudget) != tc.noBudget || len(rep.Failed) != 0 {
				t.Fatalf("report %+v: want %d tools, %d ready, %d without budget", rep, tc.want, tc.ready, tc.noBudget)
			}
			if want := seq(tc.want); !slices.Equal(progress, want) {
				t.Errorf("progress %v, want %v", progress, want)
			}
			for _, id := range append(rep.Ready, rep.NoBudget...) {
				if !slices.Contains(all, id) {
					t.Errorf("warmed %s, not a tool of the folders", id)
				}
			}
			// Every warmed tool answers, with or without a warm instance.
			for _, id := range append(rep.Ready, rep.NoBudget...) {
				if env := h.Call(context.Background(), id, json.RawMessage(`{"text":"a b","a":"a","b":"b","pattern":"a","message":"m"}`)); env.Error != nil && env.Error.Code != abi.CodeInvalidArguments {
					t.Errorf("%s after Warm: %v", id, env.Error)
				}
			}
		})
	}
}

// seq is 0, 1, …, n.
func seq(n int) []int {
	out := make([]int, n+1)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestWarm_mostCalledFirst: Warm prepares the tools this host has
// called most first (the order that decides who gets a tight budget).
func TestWarm_mostCalledFirst(t *testing.T) {
	h := hosttest.NewHost(t, nil, filepath.Join(hosttest.Toolpacks(t), "text"))
	ctx := context.Background()
	for range 3 {
		h.Call(ctx, "text:stats", json.RawMessage(`{"text":"a"}`))
	}
	h.Call(ctx, "text:regex", json.RawMessage(`{"text":"a","pattern":"a"}`))
	got := host.WarmOrder(h)
	if want := []string{"text:stats", "text:regex", "text:diff"}; !slices.Equal(got, want) {
		t.Fatalf("warm order %v, want %v", got, want)
	}
}

// TestExec_preparesEveryToolAtOnce: Exec starts preparing every tool its
// output names before the first call runs, so a tool whose call is
// skipped after a failure was still prepared.
func TestExec_preparesEveryToolAtOnce(t *testing.T) {
	h := hosttest.NewHost(t, nil, filepath.Join(hosttest.Toolpacks(t), "core"), filepath.Join(hosttest.Toolpacks(t), "text"))
	out := "<ACTION>\n<text:regex><text>a</text><pattern>(</pattern></text:regex>\n<text:stats><text>a b</text></text:stats>\n</ACTION>"
	turn := h.Exec(context.Background(), out)
	if len(turn.Results) != 2 || turn.Results[0].Status != abi.StatusFailure || turn.Results[1].Error == nil || turn.Results[1].Error.Code != abi.CodeSkipped {
		t.Fatalf("want a failed call then a skipped one, got %+v", turn.Results)
	}
	// On an empty cache the tool is prepared on the interpreter and its
	// pool comes with its compile, which starts 10 s later (no call).
	for range 1200 {
		for _, th := range h.Health() {
			if th.ID == "text:stats" && th.Pool != nil && th.Pool.Instances > 0 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the skipped call's tool was never prepared")
}

// TestWarmInBackground: the background warm-up covers the catalogue at
// start and again after each change, and WarmStatus says when it is done.
func TestWarmInBackground(t *testing.T) {
	tp := hosttest.Toolpacks(t)
	h := hosttest.NewHost(t, nil, filepath.Join(tp, "core"))
	if _, done := h.WarmStatus(); done {
		t.Fatal("done before any warm-up started")
	}
	h.WarmInBackground()
	if rep := waitWarm(t, h); rep.Tools != 1 || len(rep.Ready) != 1 {
		t.Fatalf("at start: %+v", rep)
	}
	if err := h.Load(filepath.Join(tp, "text")); err != nil {
		t.Fatal(err)
	}
	if rep := waitWarm(t, h); rep.Tools != 4 || len(rep.Ready) != 4 {
		t.Fatalf("after loading a folder: %+v", rep)
	}
}

// waitWarm waits (up to two minutes, on a loaded machine) for the
// background warm-up to be done.
func waitWarm(t *testing.T, h *host.Host) host.WarmReport {
	t.Helper()
	for range 2400 {
		if rep, done := h.WarmStatus(); done {
			return rep
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the background warm-up did not end")
	return host.WarmReport{}
}

// TestWarm_runnable: with Runnable (the CLI's progress bar), a tool whose
// compiled module is not built yet counts warm on the interpreter (Cold)
// and its compile is not started; a plain Warm of the same host then
// waits for the compiled tier and its pool (Ready). Both answer calls.
func TestWarm_runnable(t *testing.T) {
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Dirs: []string{filepath.Join(hosttest.Toolpacks(t), "core")}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	for _, tc := range []struct {
		name     string
		runnable bool
		cold     []string
		ready    []string
	}{
		{name: "runnable", runnable: true, cold: []string{"core:echo"}, ready: []string{}},
		{name: "compiled", runnable: false, ready: []string{"core:echo"}},
	} {
		rep := h.Warm(ctx, host.WarmOptions{Tools: []string{"core:echo"}, Runnable: tc.runnable})
		if !slices.Equal(rep.Cold, tc.cold) || !slices.Equal(rep.Ready, tc.ready) || len(rep.Failed) != 0 {
			t.Fatalf("%s: report %+v, want cold %v and ready %v", tc.name, rep, tc.cold, tc.ready)
		}
		if env := h.Call(ctx, "core:echo", json.RawMessage(`{"message":"m"}`)); env.Error != nil {
			t.Fatalf("%s: call: %v", tc.name, env.Error)
		}
	}
}
