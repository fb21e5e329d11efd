package wasm

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"golang.org/x/sys/cpu"

	"github.com/agenthost/agenthost/host/internal/filecache"
)

// Compiled code on disk. wazero keeps each compiled module in a file of
// its own folder, named by a digest of the module, and reads back
// whatever file has that name: its content names no module, so another
// module's compiled code copied under the name was run in its place.
// Its format is wazero's, with no room for a header, so the runner keeps
// one beside it: a seal per compiled file (a filecache file whose header
// names the compiled file's name), recording which file this host wrote
// after compiling (its identity on disk, see fileIdentity). Before a
// module compiles, its compiled file is checked against its seal; a file
// without one, or not the sealed one, is removed with one log line, and
// wazero compiles the module again and writes it anew, which is sealed.
//
// The name of a module's file is wazero's own derivation (fileCacheKey in
// its compiler), restated here: TestCompiledFileName fails when a wazero
// upgrade changes it.

// compiledSealVersion changes whenever the seal's body would.
const compiledSealVersion = "1"

// compiledCache checks and seals wazero's compiled files. Safe for
// concurrent use; nil checks nothing (no cache folder).
type compiledCache struct {
	dir   string // wazero's folder of compiled files
	seals filecache.Store
	// discarded reports a compiled file that failed its check.
	discarded func(path, reason string)
	lost      sync.Once // the log line for a file not where it was expected
	lostLog   func(path string)
}

// newCompiledCache guards the compiled files wazero keeps under cacheDir
// (wazero.NewCompilationCacheWithDir(cacheDir)).
func newCompiledCache(cacheDir string, gate *filecache.Gate, discarded func(path, reason string), lost func(path string)) (*compiledCache, error) {
	abs, err := filepath.Abs(cacheDir)
	if err != nil {
		return nil, err
	}
	return &compiledCache{
		dir: filepath.Join(abs, "wazero-"+wazeroVersion()+"-"+runtime.GOARCH+"-"+runtime.GOOS),
		seals: filecache.Store{
			Dir:   filepath.Join(abs, "seal"),
			Gate:  gate,
			Magic: "agenthost-compiled-seal-v" + compiledSealVersion + "\n",
			Name:  func(key string) string { return "seal-" + key + ".json" },
			// A bad seal is not logged: the compiled file it should vouch
			// for then fails its check, which is.
		},
		discarded: discarded,
		lostLog:   lost,
	}, nil
}

// compiledSeal is a seal's body: what the compiled file was when sealed.
type compiledSeal struct {
	Size     int64  `json:"size"`
	Identity string `json:"identity"`
}

// guard runs compile, wazero's compilation of code (which reads the
// compiled file when there is one), after removing that file unless it
// is the one sealed under its name; a file compile wrote is sealed.
func (c *compiledCache) guard(code []byte, compile func() (wazero.CompiledModule, error)) (wazero.CompiledModule, error) {
	if c == nil {
		return compile()
	}
	name := compiledFileName(code)
	path := filepath.Join(c.dir, name)
	trusted := c.check(path, name)
	mod, err := compile()
	if err == nil && !trusted {
		c.seal(path, name)
	}
	return mod, err
}

// check reports whether the compiled file at path is the sealed one; a
// file that is not is removed (with a log line).
func (c *compiledCache) check(path, name string) bool {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	reason := ""
	var want compiledSeal
	switch body := c.seals.Load(name, nil); {
	case err != nil:
		reason = "it cannot be read: " + err.Error()
	case !fi.Mode().IsRegular():
		reason = "it is not a regular file"
	case body == nil:
		reason = "it has no seal: it was not written by this host's compilation of the module"
	case json.Unmarshal(body, &want) != nil:
		reason = "its seal is not well formed"
	default:
		if got, ok := sealOf(path, fi); !ok || got != want {
			reason = "it is not the file sealed under its name: another module's compiled code, or an edited file"
		}
	}
	if reason == "" {
		return true
	}
	_ = os.Remove(path)
	if c.discarded != nil {
		c.discarded(path, reason)
	}
	return false
}

// seal records the compiled file at path, just written by wazero.
func (c *compiledCache) seal(path, name string) {
	fi, err := os.Lstat(path)
	if err != nil {
		// wazero stores only what its compiler made (not on every
		// platform) and may fail to write: say once if the file is not
		// where the derivation of its name expects it.
		if errors.Is(err, fs.ErrNotExist) && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") && c.lostLog != nil {
			c.lost.Do(func() { c.lostLog(path) })
		}
		return
	}
	s, ok := sealOf(path, fi)
	if !ok {
		return
	}
	body, err := json.Marshal(s)
	if err == nil {
		_ = c.seals.Save(name, body)
	}
}

// sealOf is the seal of the file at path (fi its Lstat); false when it
// cannot be made.
func sealOf(path string, fi fs.FileInfo) (compiledSeal, bool) {
	id, ok := fileIdentity(path, fi)
	return compiledSeal{Size: fi.Size(), Identity: id}, ok
}

// compiledFileName is the name of wazero's compiled file of code: the
// hex SHA-256 of the module's ID (the SHA-256 of code, then a zero byte:
// no function listeners, ensureTermination off, as interruptConfig
// sets), the compiler's magic "WAZEVO" and the CPU features it compiled
// for.
func compiledFileName(code []byte) string {
	h := sha256.New()
	h.Write(code)
	h.Write([]byte{0})
	id := h.Sum(nil)
	k := sha256.New()
	k.Write(id)
	k.Write([]byte("WAZEVO"))
	k.Write(binary.LittleEndian.AppendUint64(nil, cpuFeatures()))
	return hex.EncodeToString(k.Sum(nil))
}

// cpuFeatures is wazero's record of the CPU features its compiler uses
// (internal/platform: CpuFeatureFlags).
func cpuFeatures() uint64 {
	var f uint64
	switch runtime.GOARCH {
	case "amd64":
		if cpu.X86.HasSSE41 {
			f |= 1
		}
		if cpu.X86.HasBMI1 {
			f |= 2
		}
		if cpu.X86.HasBMI1 && cpu.X86.HasBMI2 && cpu.X86.HasPOPCNT {
			f |= 4
		}
	case "arm64":
		if cpu.ARM64.HasATOMICS {
			f |= 1
		}
	}
	return f
}

// wazeroVersion is the version wazero names its folder with: the
// module's version in the build information, else "dev".
var wazeroVersion = sync.OnceValue(func() string {
	v := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if strings.Contains(d.Path, "github.com/tetratelabs/wazero") {
				v = d.Version
			}
		}
		if v == "" || v == "(devel)" {
			v = bi.Main.Version
		}
	}
	if v == "" || v == "(devel)" {
		return "dev"
	}
	return v
})
