package wasm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/runner/wasm"
)

// The two ways a guest SDK tool is built.
const (
	modeCommand = "command" // _start: the slow path
	modeReactor = "reactor" // -buildmode=c-shared: the fast path
)

// sdkGuest builds the guest-SDK program at dir (relative to this
// package) in mode, cached in the temp folder by the digest of its
// source and of the SDK's.
func sdkGuest(t testing.TB, dir, mode string) string {
	t.Helper()
	goGuests.Lock()
	defer goGuests.Unlock()
	key := dir + "|" + mode
	if p, ok := goGuests.built[key]; ok {
		return p
	}
	h := sha256.New()
	for _, pattern := range []string{filepath.Join(dir, "*.go"), "../../../abi/guest/*.go", "../../../abi/*.go"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			h.Write([]byte(f))
			h.Write(b)
		}
	}
	cacheDir := filepath.Join(os.TempDir(), "agenthost-test-guests")
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(cacheDir, filepath.Base(dir)+"-"+mode+"-"+hex.EncodeToString(h.Sum(nil)[:8])+".wasm")
	if _, err := os.Stat(out); err != nil {
		tmp := out + ".tmp"
		args := []string{"build", "-trimpath", "-buildvcs=false"}
		if mode == modeReactor {
			args = append(args, "-buildmode=c-shared")
		}
		cmd := exec.Command("go", append(args, "-o", tmp, "./"+filepath.ToSlash(dir))...)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s (%s): %v\n%s", dir, mode, err, b)
		}
		if err := os.Rename(tmp, out); err != nil {
			t.Fatal(err)
		}
	}
	goGuests.built[key] = out
	return out
}

// probeGuest is the fast-path test guest in mode.
func probeGuest(t testing.TB, mode string) string {
	return sdkGuest(t, "testdata/reactor/probe", mode)
}

// newPoolRunner returns a Runner with a pool budget, closed at the end of
// the test.
func newPoolRunner(t testing.TB, budget uint64) *wasm.Runner {
	t.Helper()
	cache := filepath.Join(os.TempDir(), "agenthost-test-wazero-cache")
	r, err := wasm.New(context.Background(), wasm.Options{CacheDir: cache, PoolMemoryBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}
