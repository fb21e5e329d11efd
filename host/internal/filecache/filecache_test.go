package filecache_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host/internal/filecache"
)

func store(t *testing.T, dir string, discarded *[]string) *filecache.Store {
	t.Helper()
	return &filecache.Store{
		Dir:       dir,
		Magic:     "agenthost-test-file-v1\n",
		Name:      func(key string) string { return "test-" + key + ".bin" },
		Discarded: func(path, reason string) { *discarded = append(*discarded, reason) },
	}
}

// TestStore: a saved body reads back; a torn, edited, foreign or
// invalid file, and the valid file of another key planted under this
// key's name, is removed and reported, never returned; no folder keeps
// nothing.
func TestStore(t *testing.T) {
	body := []byte("derived module bytes")
	tests := []struct {
		name   string
		damage func(t *testing.T, s *filecache.Store, path string)
		valid  func([]byte) bool
		want   []byte
	}{
		{"round trip", func(*testing.T, *filecache.Store, string) {}, nil, body},
		{"torn", func(t *testing.T, _ *filecache.Store, path string) { truncate(t, path, 10) }, nil, nil},
		{"edited", func(t *testing.T, _ *filecache.Store, path string) {
			b, _ := os.ReadFile(path)
			b[len(b)-1] ^= 1
			write(t, path, b)
		}, nil, nil},
		{"foreign", func(t *testing.T, _ *filecache.Store, path string) { write(t, path, body) }, nil, nil},
		{"another key's file", func(t *testing.T, s *filecache.Store, path string) {
			// A whole, valid file, but of another module: its bytes
			// under this key's name must not be taken for this key's.
			if err := s.Save("other", []byte("another module's bytes")); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(s.Path("other"))
			if err != nil {
				t.Fatal(err)
			}
			write(t, path, b)
		}, nil, nil},
		{"another key's file, same body", func(t *testing.T, s *filecache.Store, path string) {
			if err := s.Save("k-other", body); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(s.Path("k-other"))
			if err != nil {
				t.Fatal(err)
			}
			write(t, path, b)
		}, nil, nil},
		{"fails the caller's check", func(*testing.T, *filecache.Store, string) {}, func([]byte) bool { return false }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var discarded []string
			s := store(t, t.TempDir(), &discarded)
			if err := s.Save("k", body); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, s, s.Path("k"))
			got := s.Load("k", tc.valid)
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("Load = %q, want %q", got, tc.want)
			}
			if tc.want == nil {
				if len(discarded) != 1 {
					t.Fatalf("discarded %q, want one report", discarded)
				}
				if _, err := os.Stat(s.Path("k")); !os.IsNotExist(err) {
					t.Fatalf("the bad file is still there: %v", err)
				}
			}
		})
	}
	var discarded []string
	if err := store(t, t.TempDir(), &discarded).Save("two\nlines", body); err == nil {
		t.Fatal("a key with a line break was saved")
	}
	none := store(t, "", &discarded)
	if err := none.Save("k", body); err != nil || none.Load("k", nil) != nil {
		t.Fatalf("a store without a folder kept something (err %v)", err)
	}
}

func truncate(t *testing.T, path string, n int64) {
	t.Helper()
	if err := os.Truncate(path, n); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestGate: once the gate is closed a store neither writes nor removes
// anything, and Close waits for the writes in progress (run with -race).
func TestGate(t *testing.T) {
	dir := t.TempDir()
	gate := &filecache.Gate{}
	s := filecache.Store{Dir: dir, Magic: "test-v1\n", Name: func(k string) string { return k + ".bin" }, Gate: gate}
	if err := s.Save("kept", []byte("body")); err != nil {
		t.Fatal(err)
	}
	// A damaged file, to see that a closed store does not remove it.
	if err := os.WriteFile(s.Path("damaged"), []byte("test-v1\nnot a digest"), 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Save(fmt.Sprintf("racing-%d", i), bytes.Repeat([]byte{byte(i)}, 1<<20))
		}()
	}
	gate.Close()
	// Whatever Save did before Close is finished: the folder holds whole
	// files only, and no temporary one.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Fatalf("a write was still in progress after Close: %s", e.Name())
		}
	}
	before := len(entries)
	if err := s.Save("late", []byte("body")); err != nil {
		t.Fatal(err)
	}
	if s.Load("damaged", nil) != nil {
		t.Fatal("the damaged file loaded")
	}
	wg.Wait()
	after, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path("late")); err == nil || len(after) != before {
		t.Fatalf("the closed store wrote or removed files: %d entries before, %d after", before, len(after))
	}
	if string(s.Load("kept", nil)) != "body" {
		t.Fatal("a file saved before Close no longer loads")
	}
}
