package wasm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"sync"

	"github.com/agenthost/agenthost/host/internal/filecache"
)

// Rewriting a reactor (decoding a Go module of several MiB, scanning
// every function body for table changes, encoding it again) cost about
// a third of a process's first call. A reactorCache keeps the rewrites
// in memory and, with a cache folder, on disk (host/internal/filecache:
// each file checked against its digest on read), keyed by the SHA-256 of
// the module and reactorVersion.

// reactorVersion changes whenever rewriteReactor's output would.
const reactorVersion = "1"

// reactorCache memoizes rewriteReactor. Safe for concurrent use.
type reactorCache struct {
	files filecache.Store
	mu    sync.Mutex
	mem   map[string]*reactorModule
}

func newReactorCache(dir string, discarded func(path, reason string)) *reactorCache {
	return &reactorCache{
		files: filecache.Store{
			Dir:       dir,
			Magic:     "agenthost-reactor-file-v" + reactorVersion + "\n",
			Name:      func(key string) string { return "reactor-" + key + ".bin" },
			Discarded: discarded,
		},
		mem: map[string]*reactorModule{},
	}
}

// rewrite returns rewriteReactor(code) and the SHA-256 of its module,
// from memory, from disk or computed (then stored in both; a failed disk
// write is not an error). A refusal is not cached.
func (c *reactorCache) rewrite(code []byte) (*reactorModule, [sha256.Size]byte, error) {
	h := sha256.New()
	h.Write([]byte("agenthost-reactor-v" + reactorVersion + "\x00"))
	h.Write(code)
	key := hex.EncodeToString(h.Sum(nil))
	c.mu.Lock()
	rm := c.mem[key]
	c.mu.Unlock()
	if rm == nil {
		rm = decodeReactor(c.files.Load(key, nil))
	}
	if rm == nil {
		var err error
		if rm, err = rewriteReactor(code); err != nil {
			return nil, [sha256.Size]byte{}, err
		}
		rm.digest = sha256.Sum256(rm.code)
		_ = c.files.Save(key, encodeReactor(rm))
	}
	c.mu.Lock()
	c.mem[key] = rm
	c.mu.Unlock()
	return rm, rm.digest, nil
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

// encodeReactor is the stored form: the header's length (4 bytes), the
// header (JSON), the module, the initial memory without its trailing
// zeros.
func encodeReactor(rm *reactorModule) []byte {
	stored := len(bytes.TrimRight(rm.initial, "\x00"))
	hdr, _ := json.Marshal(reactorHeader{
		Code: len(rm.code), Digest: hex.EncodeToString(rm.digest[:]), Initial: len(rm.initial), Stored: stored,
		Globals: rm.globals, Counter: rm.counter, Reusable: rm.reusable,
	})
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(hdr)))
	out = append(out, hdr...)
	out = append(out, rm.code...)
	return append(out, rm.initial[:stored]...)
}

// decodeReactor reads encodeReactor's form; nil when b is nil or not
// well formed (the file's digest already matched, so only a file of
// another layout gets here).
func decodeReactor(b []byte) *reactorModule {
	if len(b) < 4 {
		return nil
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n > len(b)-4 {
		return nil
	}
	var h reactorHeader
	if json.Unmarshal(b[4:4+n], &h) != nil {
		return nil
	}
	body := b[4+n:]
	digest, err := hex.DecodeString(h.Digest)
	if err != nil || len(digest) != sha256.Size || h.Code < 0 || h.Stored < 0 || h.Stored > h.Initial ||
		h.Code+h.Stored != len(body) || h.Counter < -1 || h.Counter >= len(h.Globals) {
		return nil
	}
	rm := &reactorModule{
		code:     body[:h.Code:h.Code],
		initial:  make([]byte, h.Initial),
		globals:  h.Globals,
		counter:  h.Counter,
		reusable: h.Reusable,
	}
	copy(rm.initial, body[h.Code:])
	copy(rm.digest[:], digest)
	return rm
}
