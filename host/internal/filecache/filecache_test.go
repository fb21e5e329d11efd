package filecache_test

import (
	"bytes"
	"os"
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
// invalid file is removed and reported, never returned; no folder keeps
// nothing.
func TestStore(t *testing.T) {
	body := []byte("derived module bytes")
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
		valid  func([]byte) bool
		want   []byte
	}{
		{"round trip", func(*testing.T, string) {}, nil, body},
		{"torn", func(t *testing.T, path string) { truncate(t, path, 10) }, nil, nil},
		{"edited", func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			b[len(b)-1] ^= 1
			write(t, path, b)
		}, nil, nil},
		{"foreign", func(t *testing.T, path string) { write(t, path, body) }, nil, nil},
		{"fails the caller's check", func(*testing.T, string) {}, func([]byte) bool { return false }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var discarded []string
			s := store(t, t.TempDir(), &discarded)
			if err := s.Save("k", body); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, s.Path("k"))
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
