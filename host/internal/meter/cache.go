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
// Each file holds a header with the SHA-256 of the module it stores, and
// a read checks it: a torn, corrupted or edited file is discarded,
// reported to Discarded and rebuilt, never run. The folder itself must be
// private to the user (the host checks the cache root's owner and mode):
// someone who can write there can also write a matching header.
type Cache struct {
	dir string
	mu  sync.Mutex
	mem map[string][]byte
	// Discarded, when set, is told of each stored file that failed its
	// check (for the host's log).
	Discarded func(path, reason string)
}

// NewCache returns a cache that persists under dir, created 0700 on first
// write; dir "" keeps the cache in memory only.
func NewCache(dir string) *Cache {
	return &Cache{dir: dir, mem: map[string][]byte{}}
}

// fileMagic starts every stored file; the SHA-256 of the module follows.
const fileMagic = "agenthost-meter-file-v1\n"

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

// load returns the stored module, or nil when absent or when it fails its
// check (a torn, corrupted or foreign file is recomputed and overwritten).
func (c *Cache) load(key string) []byte {
	if c.dir == "" {
		return nil
	}
	path := c.path(key)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	hdr := len(fileMagic) + sha256.Size
	if len(b) < hdr || string(b[:len(fileMagic)]) != fileMagic {
		c.discard(path, "not an instrumented-module file")
		return nil
	}
	body := b[hdr:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], b[len(fileMagic):hdr]) || !bytes.HasPrefix(body, []byte(wasmHeader)) {
		c.discard(path, "its content does not match its digest")
		return nil
	}
	return body
}

func (c *Cache) discard(path, reason string) {
	_ = os.Remove(path)
	if c.Discarded != nil {
		c.Discarded(path, reason)
	}
}

// store writes the module atomically (temporary file and rename), so a
// concurrent reader sees either nothing or the whole module.
func (c *Cache) store(key string, wasm []byte) error {
	if c.dir == "" {
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("meter cache: %w", err)
	}
	f, err := os.CreateTemp(c.dir, ".meter-*.tmp")
	if err != nil {
		return fmt.Errorf("meter cache: %w", err)
	}
	sum := sha256.Sum256(wasm)
	_, werr := f.Write(append(append([]byte(fileMagic), sum[:]...), wasm...))
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
