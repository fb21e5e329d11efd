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

// guestSources are built with GOOS=wasip1: name -> (package, c-shared).
var guestSources = []struct {
	name, pkg string
	reactor   bool
}{
	{"probe", "./host/runner/extism/testdata/probe", true},
	{"echo", "./host/runner/extism/testdata/echo", true},
	{"rawecho", "./host/runner/extism/testdata/rawecho", true},
	{"wasiecho", "./host/runner/extism/testdata/wasiecho", false},
	{"web-fetch", "./plugins/web-fetch", true},
	{"web-links", "./plugins/web-links", true},
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "extism-guests")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		cacheDir = filepath.Join(dir, "cache")
		for _, g := range guestSources {
			out := filepath.Join(dir, g.name+".wasm")
			args := []string{"build", "-trimpath", "-buildvcs=false", "-o", out}
			if g.reactor {
				args = append(args, "-buildmode=c-shared")
			}
			cmd := exec.Command("go", append(args, g.pkg)...)
			cmd.Dir = repoRoot
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "build %s: %v\n%s", g.pkg, err, b)
				return 1
			}
			guests[g.name] = out
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
