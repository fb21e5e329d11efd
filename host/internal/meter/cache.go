package meter

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/agenthost/agenthost/host/internal/filecache"
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
	files filecache.Store
	mu    sync.Mutex
	mem   map[string][]byte
	// Discarded, when set, is told of each stored file that failed its
	// check (for the host's log).
	Discarded func(path, reason string)
}

// NewCache returns a cache that persists under dir, created 0700 on first
// write; dir "" keeps the cache in memory only. gate, when not nil, stops
// its writes (filecache.Gate).
func NewCache(dir string, gate *filecache.Gate) *Cache {
	c := &Cache{mem: map[string][]byte{}}
	c.files = filecache.Store{
		Dir:   dir,
		Gate:  gate,
		Magic: fileMagic,
		Name:  func(key string) string { return "meter-" + key + ".wasm" },
		Discarded: func(path, reason string) {
			if c.Discarded != nil {
				c.Discarded(path, reason)
			}
		},
	}
	return c
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
	if out = c.files.Load(key, isModule); out == nil {
		var err error
		if out, err = Instrument(wasm); err != nil {
			return nil, err
		}
		// Persisting is best effort: a read-only or full cache folder
		// costs the next process a rewrite, never this call.
		_ = c.files.Save(key, out)
	}
	c.mu.Lock()
	c.mem[key] = out
	c.mu.Unlock()
	return out, nil
}

// isModule reports whether a stored body starts like a wasm module.
func isModule(body []byte) bool { return bytes.HasPrefix(body, []byte(wasmHeader)) }
