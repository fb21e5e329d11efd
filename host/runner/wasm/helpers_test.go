package wasm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

const guestsDir = "../../../testdata/guests"

// watGuest returns the committed module of a WAT guest.
func watGuest(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(guestsDir, name, name+".wasm")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("guest %s: %v (run make -C testdata/guests)", name, err)
	}
	return p
}

// goGuests caches Go guest builds for the test process; the files are
// also kept across runs in the temp folder, keyed by the source digest.
var goGuests = struct {
	sync.Mutex
	built map[string]string
}{built: map[string]string{}}

// goGuest builds testdata/guests/<name> with GOOS=wasip1 GOARCH=wasm.
func goGuest(t testing.TB, name string) string {
	t.Helper()
	goGuests.Lock()
	defer goGuests.Unlock()
	if p, ok := goGuests.built[name]; ok {
		return p
	}
	src, err := os.ReadFile(filepath.Join(guestsDir, name, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	dir := filepath.Join(os.TempDir(), "agenthost-test-guests")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name+"-"+hex.EncodeToString(sum[:8])+".wasm")
	if _, err := os.Stat(out); err != nil {
		tmp := out + ".tmp"
		cmd := exec.Command("go", "build", "-o", tmp, "./"+filepath.ToSlash(filepath.Join(guestsDir, name)))
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build guest %s: %v\n%s", name, err, b)
		}
		if err := os.Rename(tmp, out); err != nil {
			t.Fatal(err)
		}
	}
	goGuests.built[name] = out
	return out
}

// newRunner returns a Runner closed at the end of the test. All test runners share one on-disk compilation cache so
// the Go guests are compiled once per machine, not once per test.
func newRunner(t testing.TB) *wasm.Runner {
	t.Helper()
	cache := filepath.Join(os.TempDir(), "agenthost-test-wazero-cache")
	r, err := wasm.New(context.Background(), wasm.Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// env is the host side of a test: a workspace, a cache folder and a file
// outside both.
type env struct {
	base, workspace, cache, outside string
}

// newEnv builds:
//
//	outside.txt                       (not under any mount)
//	ws/public.txt ws/secret.txt ws/data/a.txt ws/out/
//	ws/escape -> ../outside.txt       ws/alias -> public.txt
//	cache/
func newEnv(t testing.TB) env {
	t.Helper()
	base := t.TempDir()
	e := env{base: base, workspace: filepath.Join(base, "ws"), cache: filepath.Join(base, "cache", "tool"), outside: filepath.Join(base, "outside.txt")}
	files := map[string]string{
		e.outside:                                  "HOST-ONLY",
		filepath.Join(e.workspace, "public.txt"):   "public",
		filepath.Join(e.workspace, "secret.txt"):   "top secret",
		filepath.Join(e.workspace, "data/a.txt"):   "a",
		filepath.Join(e.workspace, "out/keep.txt"): "keep",
	}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"escape": "../outside.txt", "alias": "public.txt"} {
		if err := os.Symlink(target, filepath.Join(e.workspace, link)); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// grant is the default test grant: read public.txt, data/**, out/** and
// alias; write out/**; $TMP read-write; $CACHE read-write; $TOOL read.
func (e env) grant(toolDir string) *policy.Grant {
	return &policy.Grant{
		ToolID:    "test:guest",
		Workspace: e.workspace,
		ToolDir:   toolDir,
		CacheDir:  e.cache,
		Read: []policy.PathRule{
			{Root: policy.RootWorkspace, Pattern: "public.txt"},
			{Root: policy.RootWorkspace, Pattern: "alias"},
			{Root: policy.RootWorkspace, Pattern: "data/**"},
			{Root: policy.RootWorkspace, Pattern: "out/**"},
			{Root: policy.RootTool, Pattern: "**"},
			{Root: policy.RootTmp, Pattern: "**"},
			{Root: policy.RootCache, Pattern: "**"},
		},
		Write: []policy.PathRule{
			{Root: policy.RootWorkspace, Pattern: "out/**"},
			{Root: policy.RootTmp, Pattern: "**"},
			{Root: policy.RootCache, Pattern: "**"},
		},
		Limits: policy.Limits{Timeout: 10 * time.Second, MemoryBytes: 64 << 20, MaxOutputBytes: 1 << 20},
	}
}

// toolFor copies module into a fresh tool folder and returns its manifest.
func toolFor(t testing.TB, module string) *manifest.Tool {
	t.Helper()
	dir := t.TempDir()
	code, err := os.ReadFile(module)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tool.wasm"), code, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("tool readme"), 0o644); err != nil {
		t.Fatal(err)
	}
	return &manifest.Tool{
		ToolID:  "test:guest",
		Version: "1.0.0",
		Handler: manifest.Handler{Type: manifest.HandlerWasm, Module: "tool.wasm", ABI: manifest.ABIWasiCommand},
		Dir:     dir,
		Path:    filepath.Join(dir, "guest.tool.json"),
	}
}

// prepare prepares module under the env's grant, edited by edit.
func prepare(t testing.TB, r *wasm.Runner, module string, e env, edit func(*policy.Grant)) runner.Prepared {
	t.Helper()
	tool := toolFor(t, module)
	g := e.grant(tool.Dir)
	if edit != nil {
		edit(g)
	}
	p, err := r.Prepare(context.Background(), tool, g)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t testing.TB, p runner.Prepared, input string) runner.Result {
	t.Helper()
	res, err := p.Run(context.Background(), runner.Request{Input: []byte(input)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// concurrently runs fn(g) for g in [0, n) on n goroutines at once and
// fails t with each error they return.
func concurrently(t *testing.T, n int, fn func(g int) error) {
	t.Helper()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			if err := fn(g); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
