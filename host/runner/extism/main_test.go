package extism_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/extism"
)

// guests holds the test plugins built by TestMain, by name.
var guests = map[string]string{}

// cacheDir is the compilation cache the tests' runners share, so each
// module is compiled once per test binary.
var cacheDir string

// repoRoot is the module root, relative to this package.
const repoRoot = "../../.."

// guestSource is a guest built with GOOS=wasip1.
type guestSource struct {
	name, pkg string
	reactor   bool // -buildmode=c-shared
}

// testGuests are built by TestMain; benchGuests by the benchmarks that
// need them (buildGuests), so a plain test run does not build them.
var (
	testGuests = []guestSource{
		{"probe", "./host/runner/extism/testdata/probe", true},
		{"web-fetch", "./plugins/web-fetch", true},
		{"web-links", "./plugins/web-links", true},
	}
	benchGuests = []guestSource{
		{"echo", "./host/runner/extism/testdata/echo", true},
		{"rawecho", "./host/runner/extism/testdata/rawecho", true},
		{"wasiecho", "./host/runner/extism/testdata/wasiecho", false},
	}
	guestDir string
)

// buildGuests builds srcs into guestDir and records them in guests.
func buildGuests(srcs []guestSource) error {
	for _, g := range srcs {
		if _, ok := guests[g.name]; ok {
			continue
		}
		out := filepath.Join(guestDir, g.name+".wasm")
		args := []string{"build", "-trimpath", "-buildvcs=false", "-o", out}
		if g.reactor {
			args = append(args, "-buildmode=c-shared")
		}
		cmd := exec.Command("go", append(args, g.pkg)...)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w\n%s", g.pkg, err, b)
		}
		guests[g.name] = out
	}
	return nil
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "extism-guests")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		guestDir = dir
		cacheDir = filepath.Join(dir, "cache")
		if err := buildGuests(testGuests); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// newRunner returns a runner closed at the end of the test.
func newRunner(t testing.TB) *extism.Runner {
	t.Helper()
	r, err := extism.New(context.Background(), extism.Options{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

// toolFor returns a manifest running the module at path.
func toolFor(path, entry string) *manifest.Tool {
	return &manifest.Tool{
		ToolID:  "test:" + filepath.Base(path) + "." + entry,
		Version: "1.0.0",
		Handler: manifest.Handler{Type: manifest.HandlerWasm, ABI: manifest.ABIExtism, Module: filepath.Base(path), EntryPoint: entry},
		Dir:     filepath.Dir(path),
	}
}

// grantFor returns a grant with the default policy's limits.
func grantFor(tool *manifest.Tool) *policy.Grant {
	return &policy.Grant{
		ToolID: tool.ToolID,
		Limits: policy.Limits{Timeout: 10 * time.Second, MemoryBytes: 256 << 20, MaxOutputBytes: 1 << 20},
	}
}

// prepare prepares tool under grant or fails the test.
func prepare(t testing.TB, r *extism.Runner, tool *manifest.Tool, grant *policy.Grant) runner.Prepared {
	t.Helper()
	p, err := r.Prepare(context.Background(), tool, grant)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return p
}

// run runs one call or fails the test on a host error.
func run(t testing.TB, p runner.Prepared, input string) runner.Result {
	t.Helper()
	res, err := p.Run(context.Background(), runner.Request{Input: []byte(input)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}
