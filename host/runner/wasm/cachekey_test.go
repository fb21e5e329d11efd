package wasm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host/internal/filecache"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// logBuffer collects a runner's log lines (written from its goroutines).
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// count counts the log lines holding s.
func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// sharedCache is the cache folder the package's tests share (newRunner).
var sharedCache = filepath.Join(os.TempDir(), "agenthost-test-wazero-cache")

// share makes the folders subs of the cache folder cache those of
// sharedCache ("compiled" is wazero's folder), so that what is slow to
// build from the Go guests (compiled code, instrumented and rewritten
// modules) is built once per machine rather than in each fresh folder.
func share(t *testing.T, cache string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		from, to := filepath.Join(sharedCache, sub), filepath.Join(cache, sub)
		if sub == "compiled" {
			shared, err := filecache.NewCompiled(sharedCache, nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			own, err := filecache.NewCompiled(cache, nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Path(nil) is a file of wazero's folder: its parent is the folder.
			from, to = filepath.Dir(shared.Path(nil)), filepath.Dir(own.Path(nil))
		}
		if err := os.MkdirAll(from, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(from, to); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCacheRefusesAnotherModulesFile: a valid cached file of another
// module (or of another grant) copied under the real file's name, for
// each kind of file the runner keeps on disk (wazero's compiled code
// included), is discarded with one log line and rebuilt; the tool runs as itself, and the rebuilt file is
// used by the next process without complaint.
func TestCacheRefusesAnotherModulesFile(t *testing.T) {
	e := newEnv(t)
	probe := probeGuest(t, modeReactor)
	echo := filepath.Join("..", "..", "..", "toolpacks", "core", "echo.wasm")
	if _, err := os.Stat(echo); err != nil {
		t.Skipf("toolpacks not built (make toolpacks): %v", err)
	}
	planted := func(g *policy.Grant) { g.Config = map[string]string{"planted": "yes"} }
	isProbe := func(t *testing.T, res runner.Result) {
		t.Helper()
		if res.Err != nil {
			t.Fatalf("the tool failed: %+v", res.Err)
		}
		var o struct {
			Args []string `json:"args"`
		}
		if err := json.Unmarshal(res.Output, &o); err != nil || strings.Join(o.Args, " ") != "test:guest" {
			t.Fatalf("output %s: not the probe under its own grant (%v)", res.Output, err)
		}
	}
	echoed := func(t *testing.T, res runner.Result) {
		t.Helper()
		if res.Err != nil || strings.TrimSpace(string(res.Output)) != `{}` {
			t.Fatalf("ran %q (%+v), want the echo guest's answer", res.Output, res.Err)
		}
	}
	tests := []struct {
		name   string
		sub    string   // the cache's folder of this kind of file (a glob)
		logged string   // the log line of a discarded file of this kind
		share  []string // folders shared with the other tests (share)
		pool   uint64   // the runner's pool budget
		module string
		other  string              // the module whose file is planted
		edit   func(*policy.Grant) // the other preparation's grant
		input  string
		check  func(t *testing.T, res runner.Result)
	}{
		{
			name: "instrumented module", sub: "meter", logged: "discarded a cached instrumented module",
			module: watGuest(t, "echo"), other: watGuest(t, "exit3"),
			// "{}": the exit3 guest echoes an input with a key.
			input: `{}`, check: echoed,
		},
		{
			name: "compiled code", sub: "wazero-*", logged: "discarded a cached compiled module",
			module: watGuest(t, "echo"), other: watGuest(t, "exit3"),
			input: `{}`, check: echoed,
		},
		{
			name: "rewritten reactor", sub: "reactor", logged: "discarded a cached reactor module", pool: 64 << 20,
			share:  []string{"compiled", "meter"},
			module: probe, other: echo,
			input: `{"op":"echo"}`, check: isProbe,
		},
		{
			name: "start-up snapshot", sub: "snapshot", logged: "discarded a cached start-up snapshot", pool: 64 << 20,
			share:  []string{"compiled", "meter", "reactor"},
			module: probe, other: probe, edit: planted,
			input: `{"op":"echo"}`, check: isProbe,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			newRunner := func(cache string, logs *logBuffer) *wasm.Runner {
				t.Helper()
				opts := wasm.Options{CacheDir: cache, PoolMemoryBytes: tc.pool}
				if logs != nil {
					opts.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Warn})
				}
				r, err := wasm.New(context.Background(), opts)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = r.Close(context.Background()) })
				return r
			}
			real, other := t.TempDir(), t.TempDir()
			share(t, real, tc.share...)
			share(t, other, tc.share...)
			prepare(t, newRunner(real, nil), tc.module, e, nil)
			prepare(t, newRunner(other, nil), tc.other, e, tc.edit)
			victim, source := onlyFile(t, filepath.Join(real, tc.sub)), onlyFile(t, filepath.Join(other, tc.sub))
			b, err := os.ReadFile(source)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(victim, b, 0o600); err != nil {
				t.Fatal(err)
			}

			logs := &logBuffer{}
			tc.check(t, run(t, prepare(t, newRunner(real, logs), tc.module, e, nil), tc.input))
			if n := logs.count(tc.logged); n != 1 {
				t.Fatalf("%d discard lines, want 1:\n%s", n, logs.b.String())
			}
			again := &logBuffer{}
			tc.check(t, run(t, prepare(t, newRunner(real, again), tc.module, e, nil), tc.input))
			if n := again.count(tc.logged); n != 0 {
				t.Fatalf("the rebuilt file was discarded again:\n%s", again.b.String())
			}
		})
	}
}

// onlyFile is the one regular file in dir (a glob naming one folder).
func onlyFile(t *testing.T, dir string) string {
	t.Helper()
	entries, err := filepath.Glob(filepath.Join(dir, "*"))
	var files []string
	for _, e := range entries {
		if fi, err := os.Lstat(e); err == nil && fi.Mode().IsRegular() {
			files = append(files, e)
		}
	}
	if err != nil || len(files) != 1 {
		t.Fatalf("%s holds the files %q (%v), want one", dir, files, err)
	}
	return files[0]
}
