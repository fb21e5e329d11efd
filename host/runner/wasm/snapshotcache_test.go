package wasm_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
	"github.com/agenthost/agenthost/host/runner/wasm"
)

// runnerWithCache returns a Runner whose cache folder is cache, closed at
// the end of the test.
func runnerWithCache(t *testing.T, cache string) *wasm.Runner {
	t.Helper()
	r, err := wasm.New(context.Background(), wasm.Options{CacheDir: cache, PoolMemoryBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// snapshotFiles lists the start-up snapshots stored under cache.
func snapshotFiles(t *testing.T, cache string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cache, "snapshot", "snapshot-*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestSnapshotOnDisk: a second runner on the same cache folder starts a
// reactor from the snapshot the first stored, with fresh state per call
// as before; another grant, a start-up that used the file system, a grant
// passing environment variables and a damaged file each mean a start-up.
func TestSnapshotOnDisk(t *testing.T) {
	e := newEnv(t)
	probe := probeGuest(t, modeReactor)
	noLeak := func(t *testing.T, p runner.Prepared) {
		t.Helper()
		secret := randomSecret(t)
		decodeProbe(t, run(t, p, `{"op":"remember","secret":"`+secret+`"}`))
		if o := decodeProbe(t, run(t, p, `{"op":"recall","secret":"`+reverse(secret)+`"}`)); o.Calls != 1 || len(o.Dirty) > 0 {
			t.Fatalf("calls %d, the secret survived in %q", o.Calls, o.Dirty)
		}
	}

	t.Run("stored and reused", func(t *testing.T) {
		cache := t.TempDir()
		first := runnerWithCache(t, cache)
		noLeak(t, prepare(t, first, probe, e, nil))
		if n, files := wasm.Startups(first), snapshotFiles(t, cache); n != 1 || len(files) != 1 {
			t.Fatalf("first runner: %d start-ups, %d snapshots stored", n, len(files))
		}
		second := runnerWithCache(t, cache)
		p := prepare(t, second, probe, e, nil)
		if n := wasm.Startups(second); n != 0 {
			t.Fatalf("second runner ran %d start-ups, want the stored snapshot", n)
		}
		for range 3 {
			noLeak(t, p)
		}
		if o := decodeProbe(t, run(t, p, `{"op":"echo"}`)); strings.Join(o.Args, " ") != "test:guest" {
			t.Fatalf("args %q", o.Args)
		}
		// Another limit is another snapshot.
		third := runnerWithCache(t, cache)
		prepare(t, third, probe, e, func(g *policy.Grant) { g.Limits.MemoryBytes = 96 << 20 })
		if n, files := wasm.Startups(third), snapshotFiles(t, cache); n != 1 || len(files) != 2 {
			t.Fatalf("another grant: %d start-ups, %d snapshots stored", n, len(files))
		}
	})

	t.Run("start-up read a file", func(t *testing.T) {
		// What the start-up read may have changed by the next process:
		// the snapshot is not stored, and the next runner reads it again.
		cache := t.TempDir()
		tool := toolFor(t, probe)
		readme := filepath.Join(tool.Dir, "README.md")
		grant := func() *policy.Grant {
			g := e.grant(tool.Dir)
			g.Config = map[string]string{"startup-read": "/tool/README.md"}
			return g
		}
		for i, content := range []string{"first", "second"} {
			if err := os.WriteFile(readme, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runnerWithCache(t, cache)
			p, err := r.Prepare(context.Background(), tool, grant())
			if err != nil {
				t.Fatal(err)
			}
			if o := decodeProbe(t, run(t, p, `{"op":"startup"}`)); o.Data != content+" <nil>" {
				t.Fatalf("runner %d: the start-up read %q, want %q", i, o.Data, content)
			}
			if n := wasm.Startups(r); n != 1 {
				t.Fatalf("runner %d: %d start-ups", i, n)
			}
		}
		if files := snapshotFiles(t, cache); len(files) != 0 {
			t.Fatalf("stored %q", files)
		}
	})

	t.Run("environment", func(t *testing.T) {
		// The values of granted variables are in the memory: never on disk.
		cache := t.TempDir()
		secret := randomSecret(t)
		withEnv := func(g *policy.Grant) { g.Env = map[string]string{"API_KEY": secret} }
		for i := range 2 {
			r := runnerWithCache(t, cache)
			p := prepare(t, r, probe, e, withEnv)
			if o := decodeProbe(t, run(t, p, `{"op":"echo"}`)); strings.Join(o.Env, " ") != "API_KEY="+secret {
				t.Fatalf("env %q", o.Env)
			}
			if n := wasm.Startups(r); n != 1 {
				t.Fatalf("runner %d: %d start-ups", i, n)
			}
		}
		err := filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err == nil && bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the variable's value", path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("damaged", func(t *testing.T) {
		cache := t.TempDir()
		prepare(t, runnerWithCache(t, cache), probe, e, nil)
		files := snapshotFiles(t, cache)
		if len(files) != 1 {
			t.Fatalf("stored %q", files)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-100] ^= 0xff
		if err := os.WriteFile(files[0], b, 0o600); err != nil {
			t.Fatal(err)
		}
		r := runnerWithCache(t, cache)
		noLeak(t, prepare(t, r, probe, e, nil))
		if n := wasm.Startups(r); n != 1 {
			t.Fatalf("%d start-ups after the damage, want 1", n)
		}
		again := runnerWithCache(t, cache)
		prepare(t, again, probe, e, nil)
		if n := wasm.Startups(again); n != 0 {
			t.Fatalf("%d start-ups once the snapshot was stored again", n)
		}
	})
}
