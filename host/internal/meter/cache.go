package meter

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Cache memoizes Instrument in memory and, when it has a folder, on disk,
// keyed by the SHA-256 of the input module and Version. A second process
// with the same folder reads the instrumented module instead of
// rewriting it. A Cache is safe for concurrent use.
//
// The folder must be as trusted as the host binary: a planted file there
// is run as the instrumented module.
type Cache struct {
	dir string
	mu  sync.Mutex
	mem map[string][]byte
}

// NewCache returns a cache that persists under dir, created on first
// write; dir "" keeps the cache in memory only.
func NewCache(dir string) *Cache {
	return &Cache{dir: dir, mem: map[string][]byte{}}
}

// Key returns the cache key of Instrument(wasm): the hex SHA-256 of
// Version and the module bytes.
func Key(wasm []byte) string {
	h := sha256.New()
	h.Write([]byte("agenthost-meter-v" + Version + "\x00"))
	h.Write(wasm)
	return hex.EncodeToString(h.Sum(nil))
}

// Instrument returns Instrument(wasm), from memory, from disk or freshly
// computed (then stored in both; a failed disk write is not an error).
// The returned slice is shared: callers must not modify it.
func (c *Cache) Instrument(wasm []byte) ([]byte, error) {
	key := Key(wasm)
	c.mu.Lock()
	out, ok := c.mem[key]
	c.mu.Unlock()
	if ok {
		return out, nil
	}
	if out = c.load(key); out == nil {
		var err error
		if out, err = Instrument(wasm); err != nil {
			return nil, err
		}
		// Persisting is best effort: a read-only or full cache folder
		// costs the next process a rewrite, never this call.
		_ = c.store(key, out)
	}
	c.mu.Lock()
	c.mem[key] = out
	c.mu.Unlock()
	return out, nil
}

func (c *Cache) path(key string) string {
	return filepath.Join(c.dir, "meter-"+key+".wasm")
}

// load returns the stored module, or nil when absent or not a module (a
// torn or foreign file is recomputed and overwritten).
func (c *Cache) load(key string) []byte {
	if c.dir == "" {
		return nil
	}
	b, err := os.ReadFile(c.path(key))
	if err != nil || !bytes.HasPrefix(b, []byte(wasmHeader)) {
		return nil
	}
	return b
}

// store writes the module atomically (temporary file and rename), so a
// concurrent reader sees either nothing or the whole module.
func (c *Cache) store(key string, wasm []byte) error {
	if c.dir == "" {
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("meter cache: %w", err)
	}
	f, err := os.CreateTemp(c.dir, ".meter-*.tmp")
	if err != nil {
		return fmt.Errorf("meter cache: %w", err)
	}
	_, werr := f.Write(wasm)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("meter cache: %w", err)
	}
	if err := os.Rename(f.Name(), c.path(key)); err != nil {
		_ = os.Remove(f.Name())
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return fmt.Errorf("meter cache: %w", err)
	}
	return nil
}
