package extism_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host/runner/extism"
)

// syncBuffer collects a runner's log lines (written from its goroutines).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCompiledCodeOfAnotherPlugin: another plugin's compiled code copied
// under the name of this plugin's compiled file is discarded with one log
// line and compiled again; the plugin runs as itself, and the next
// process uses the new file without complaint.
func TestCompiledCodeOfAnotherPlugin(t *testing.T) {
	newRunner := func(cache string, logs *syncBuffer) *extism.Runner {
		t.Helper()
		opts := extism.Options{CacheDir: cache}
		if logs != nil {
			opts.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Warn})
		}
		r, err := extism.New(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(context.Background()) })
		return r
	}
	// Two small plugins, so the test compiles little.
	probe := toolFor(filepath.Join(thirdParty, "hello.wasm"), "run_test")
	other := toolFor(filepath.Join(thirdParty, "fail.wasm"), "run_test")
	real, planted := t.TempDir(), t.TempDir()
	prepare(t, newRunner(real, nil), probe, grantFor(probe))
	prepare(t, newRunner(planted, nil), other, grantFor(other))
	onlyFile := func(dir string) string {
		t.Helper()
		entries, err := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
		var files []string // the compiled files, not the folder of seals
		for _, e := range entries {
			if fi, err := os.Lstat(e); err == nil && fi.Mode().IsRegular() {
				files = append(files, e)
			}
		}
		if err != nil || len(files) != 1 {
			t.Fatalf("%s holds the compiled files %q (%v), want one", dir, files, err)
		}
		return files[0]
	}
	b, err := os.ReadFile(onlyFile(planted))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(onlyFile(real), b, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 0} {
		logs := &syncBuffer{}
		res := run(t, prepare(t, newRunner(real, logs), probe, grantFor(probe)), ``)
		if res.Err != nil || string(res.Output) != "Hello, world!" {
			t.Fatalf("process %d ran %q (%+v), want the hello plugin's answer", i, res.Output, res.Err)
		}
		if n := strings.Count(logs.String(), "discarded a cached compiled module"); n != want {
			t.Fatalf("process %d: %d discard lines, want %d:\n%s", i, n, want, logs.String())
		}
	}
}
