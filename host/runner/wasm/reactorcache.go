package wasm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/host/internal/filecache"
	"github.com/agenthost/agenthost/host/internal/meter"
)

// Rewriting a reactor (decoding a Go module of several MiB, scanning
// every function body for table changes, encoding it again) cost about
// a third of a process's first call. A reactorCache keeps the rewrites
// in memory and, with a cache folder, on disk (host/internal/filecache:
// each file checked against its digest on read). The key is derived from
// the SHA-256 of the tool's own module (already computed to check the
// manifest's pin), the meter's version and reactorVersion: the rewrite
// is of the instrumented module, which those determine, so a hit needs
// neither the instrumented module nor another pass over the bytes.

// reactorVersion changes whenever rewriteReactor's output would.
const reactorVersion = "1"

// reactorCache memoizes rewriteReactor. Safe for concurrent use.
type reactorCache struct {
	files filecache.Store
	mu    sync.Mutex
	mem   map[string]*reactorModule
}

func newReactorCache(dir string, gate *filecache.Gate, discarded func(path, reason string)) *reactorCache {
	return &reactorCache{
		files: filecache.Store{
			Dir:       dir,
			Gate:      gate,
			Magic:     "agenthost-reactor-file-v" + reactorVersion + "\n",
			Name:      func(key string) string { return "reactor-" + key + ".bin" },
			Discarded: discarded,
		},
		mem: map[string]*reactorModule{},
	}
}

// rewrite returns the rewritten reactor of the module whose hex SHA-256
// is sum, from memory, from disk, or computed by rewriteReactor over
// instrumented() (then stored in both; a failed disk write is not an
// error). A refusal is not cached.
func (c *reactorCache) rewrite(sum string, instrumented func() ([]byte, error)) (*reactorModule, error) {
	return c.rewriteAs(false, sum, instrumented)
}

// rewriteCommand is rewrite for a command module (rewriteModule).
func (c *reactorCache) rewriteCommand(sum string, instrumented func() ([]byte, error)) (*reactorModule, error) {
	return c.rewriteAs(true, sum, instrumented)
}

// cached returns the rewritten reactor of the module whose hex SHA-256 is
// sum when memory or disk holds it, else nil.
func (c *reactorCache) cached(sum string) *reactorModule {
	key := reactorKey(sum)
	rm := c.lookup(key)
	if rm != nil {
		c.remember(key, rm)
	}
	return rm
}

// lookup is the rewrite stored under key, in memory or on disk, or nil.
func (c *reactorCache) lookup(key string) *reactorModule {
	c.mu.Lock()
	rm := c.mem[key]
	c.mu.Unlock()
	if rm == nil {
		rm = decodeReactor(c.files.Load(key, nil))
	}
	return rm
}

// remember keeps rm in memory under key.
func (c *reactorCache) remember(key string, rm *reactorModule) {
	c.mu.Lock()
	c.mem[key] = rm
	c.mu.Unlock()
}

func (c *reactorCache) rewriteAs(command bool, sum string, instrumented func() ([]byte, error)) (*reactorModule, error) {
	key := reactorKey(sum)
	if command {
		key = reactorKey("command:" + sum)
	}
	rm := c.lookup(key)
	if rm == nil {
		code, err := instrumented()
		if err != nil {
			return nil, err
		}
		if rm, err = rewriteModule(code, command); err != nil {
			return nil, err
		}
		rm.digest = sha256.Sum256(rm.code)
		_ = c.files.Save(key, encodeReactor(rm))
	}
	c.remember(key, rm)
	return rm, nil
}

// reactorKey is the cache key of the module whose hex SHA-256 is sum.
func reactorKey(sum string) string {
	k := sha256.Sum256([]byte("agenthost-reactor-v" + reactorVersion + "\x00meter-v" + meter.Version + "\x00" + strings.ToLower(sum)))
	return hex.EncodeToString(k[:])
}

// reactorHeader is the stored form's metadata.
type reactorHeader struct {
	Code     int      `json:"code"`
	Digest   string   `json:"digest"`
	Initial  int      `json:"initial"`
	Stored   int      `json:"stored"` // bytes of initial stored: the rest are zero
	Globals  []string `json:"globals"`
	Counter  int      `json:"counter"`
	Reusable bool     `json:"reusable"`
}

// encodeReactor is the stored form (framed.go): the header, then the
// module and the initial memory without its trailing zeros.
func encodeReactor(rm *reactorModule) []byte {
	stored := len(bytes.TrimRight(rm.initial, "\x00"))
	out, _ := frame(reactorHeader{
		Code: len(rm.code), Digest: hex.EncodeToString(rm.digest[:]), Initial: rm.initialSize, Stored: stored,
		Globals: rm.globals, Counter: rm.counter, Reusable: rm.reusable,
	}, rm.code, rm.initial[:stored])
	return out
}

// decodeReactor reads encodeReactor's form; nil when b is nil or not
// well formed (the file's digest already matched, so only a file of
// another layout gets here).
func decodeReactor(b []byte) *reactorModule {
	var h reactorHeader
	body, ok := unframe(b, &h)
	if !ok {
		return nil
	}
	digest, err := hex.DecodeString(h.Digest)
	if err != nil || len(digest) != sha256.Size || h.Code < 0 || h.Stored < 0 || h.Stored > h.Initial ||
		h.Code+h.Stored != len(body) || h.Counter < -1 || h.Counter >= len(h.Globals) {
		return nil
	}
	rm := &reactorModule{
		code:        body[:h.Code:h.Code],
		initial:     body[h.Code:],
		initialSize: h.Initial,
		globals:     h.Globals,
		counter:     h.Counter,
		reusable:    h.Reusable,
	}
	copy(rm.digest[:], digest)
	return rm
}
