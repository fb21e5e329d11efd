package filecache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"golang.org/x/sys/cpu"
)

// Compiled code on disk. wazero keeps each compiled module in a file of
// its own folder, named by a digest of the module, and reads back
// whatever file has that name: its content names no module, so another
// module's compiled code copied under the name ran in its place. Its
// format is wazero's, with no room for a header, so a seal is kept
// beside it: a file of this package whose header names the compiled
// file's name, recording which file this host wrote after compiling (its
// identity on disk, see fileIdentity). Before a module compiles, its
// compiled file is checked against its seal; a file without one, or not
// the sealed one, is removed and reported, and wazero compiles the
// module again and writes it anew, which is sealed.
//
// The name of a module's file is wazero's own derivation (fileCacheKey
// in its compiler), restated here for a runtime with no function
// listeners and without WithCloseOnContextDone, as the runners configure
// theirs; TestCompiledFileName fails when a wazero upgrade changes it.

// compiledSealVersion changes whenever a seal's body would.
const compiledSealVersion = "1"

// Compiled checks and seals the compiled files wazero keeps in a cache
// folder (wazero.NewCompilationCacheWithDir). Safe for concurrent use;
// a nil Compiled checks nothing.
type Compiled struct {
	dir       string // wazero's folder of compiled files
	seals     Store
	discarded func(path, reason string)
	lost      func(path string)
	lostOnce  sync.Once
}

// NewCompiled guards the compiled files wazero keeps under cacheDir. The
// seals go to a folder "seal" in wazero's, written under gate. discarded, when set, is
// told of each compiled file removed; lost, when set, once, of a
// compiled file not where the derivation of its name expects it (then
// nothing is checked: a wazero upgrade changed it).
func NewCompiled(cacheDir string, gate *Gate, discarded func(path, reason string), lost func(path string)) (*Compiled, error) {
	abs, err := filepath.Abs(cacheDir)
	if err != nil {
		return nil, fmt.Errorf("file cache: %w", err)
	}
	dir := filepath.Join(abs, "wazero-"+wazeroVersion()+"-"+runtime.GOARCH+"-"+runtime.GOOS)
	return &Compiled{
		dir: dir,
		seals: Store{
			// Beside the compiled files: wazero opens those by name only,
			// and a seal lives as long as the folder of its version.
			Dir:   filepath.Join(dir, "seal"),
			Gate:  gate,
			Magic: "agenthost-compiled-seal-v" + compiledSealVersion + "\n",
			Name:  func(key string) string { return "seal-" + key + ".json" },
			// A bad seal is not reported: the compiled file it should
			// vouch for then fails its check, which is.
		},
		discarded: discarded,
		lost:      lost,
	}, nil
}

// Path is where wazero keeps the compiled code of the module code.
func (c *Compiled) Path(code []byte) string { return filepath.Join(c.dir, compiledFileName(code)) }

// compiledSeal is a seal's body: what the compiled file was when sealed.
type compiledSeal struct {
	Size     int64  `json:"size"`
	Identity string `json:"identity"`
}

// Guard runs compile, wazero's compilation of code (which reads the
// compiled file when there is one), after removing that file unless it
// is the one sealed under its name; a file compile wrote is sealed.
func (c *Compiled) Guard(code []byte, compile func() error) error {
	if c == nil {
		return compile()
	}
	name := compiledFileName(code)
	path := filepath.Join(c.dir, name)
	trusted, err := c.check(path, name)
	if err != nil {
		return err
	}
	err = compile()
	if err == nil && !trusted {
		c.seal(path, name)
	}
	return err
}

// check reports whether the compiled file at path is the sealed one; a
// file that is not is removed and reported. An error means such a file
// is still there (it could not be removed, or the gate is closed): wazero
// must not compile, since it would read it.
func (c *Compiled) check(path, name string) (bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
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
		return true, nil
	}
	if !c.seals.Gate.enter() {
		return false, fmt.Errorf("compiled file %s %s, and the cache is closed", path, reason)
	}
	defer c.seals.Gate.leave()
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("compiled file %s %s, and it cannot be removed: %w", path, reason, err)
	}
	if c.discarded != nil {
		c.discarded(path, reason)
	}
	return false, nil
}

// seal records the compiled file at path, just written by wazero.
func (c *Compiled) seal(path, name string) {
	fi, err := os.Lstat(path)
	if err != nil {
		// wazero stores only what its compiler made (amd64 and arm64)
		// and may fail to write.
		if errors.Is(err, fs.ErrNotExist) && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") && c.lost != nil {
			c.lostOnce.Do(func() { c.lost(path) })
		}
		return
	}
	s, ok := sealOf(path, fi)
	if !ok {
		return
	}
	if body, err := json.Marshal(s); err == nil {
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
// no function listeners, ensureTermination off), the compiler's magic
// "WAZEVO" and the CPU features it compiled for.
func compiledFileName(code []byte) string {
	h := sha256.New()
	h.Write(code)
	h.Write([]byte{0})
	k := sha256.New()
	k.Write(h.Sum(nil))
	k.Write([]byte("WAZEVO"))
	k.Write(binary.LittleEndian.AppendUint64(nil, cpuFeatures()))
	return hex.EncodeToString(k.Sum(nil))
}

// cpuFeatures is wazero's record of the CPU features its compiler uses
// (its internal/platform.CpuFeatureFlags).
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

// wazeroVersion is the version wazero names its folder with: wazero's
// version in the build information, else "dev".
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
