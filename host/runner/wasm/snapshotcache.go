package wasm

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	iofs "io/fs"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agenthost/agenthost/host/internal/filecache"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner"
)

// Snapshots on disk (docs/POOLS.md, "Snapshots on disk"). A reactor's
// start-up (the Go runtime's initialisation and the plugin's main) took
// 13–18 ms of every process's first call of a tool. With a cache folder
// the snapshot it leaves is stored, checked against its digest on read
// like every cached file, and a later process starts from it.
//
// A snapshot is stored only when it is a function of what the key
// records:
//   - the rewritten module (its digest), the guest's arguments, the
//     mounts as the guest sees them (path, root, kind, read-only) and the
//     limits;
//   - the version of wazero (its WASI answers), the build of the host
//     when it was recorded, and snapshotVersion (the host's own start-up
//     environment);
//   - the machine's boot: the guest reads the monotonic clock, which
//     starts again at each boot (a deterministic tool has a fixed clock
//     and needs none).
//
// And it is not stored at all when the start-up touched the file system
// (opened, listed or looked up anything: a file's content could change
// before the next process), or when the grant passes environment
// variables (their values, perhaps secrets, would be in the memory
// written to disk).

// snapshotVersion changes whenever the start-up environment a guest sees
// (besides what the key records) would.
const snapshotVersion = "2"

// maxStoredSnapshot is the largest memory stored: a few start-ups that
// leave more would fill the cache folder (and its size cap), and reading
// one back and checking its digest would take a quarter of a second or
// more.
const maxStoredSnapshot = 256 << 20

// snapshotCache stores start-up snapshots. Safe for concurrent use.
type snapshotCache struct {
	files filecache.Store
}

func newSnapshotCache(dir string, gate *filecache.Gate, discarded func(path, reason string)) *snapshotCache {
	return &snapshotCache{files: filecache.Store{
		Dir:       dir,
		Gate:      gate,
		Magic:     "agenthost-snapshot-file-v" + snapshotVersion + "\n",
		Name:      func(key string) string { return "snapshot-" + key + ".bin" },
		Discarded: discarded,
	}}
}

// snapshotKey is the key of the snapshot of rm under grant, with mounts
// and limits (the prepared tool's), or "" when it must not be stored (see
// the file comment).
func snapshotKey(rm *reactorModule, tool *manifest.Tool, grant *policy.Grant, mounts []mount, limits policy.Limits) string {
	if len(grant.Env) > 0 {
		return ""
	}
	boot := "deterministic"
	if !limits.Deterministic {
		id, err := bootID()
		if err != nil {
			return ""
		}
		boot = id
	}
	h := sha256.New()
	field := func(s string) {
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	field("agenthost-snapshot-v" + snapshotVersion)
	field(builtWith())
	field(boot)
	field(hex.EncodeToString(rm.digest[:]))
	for _, a := range args(tool.ToolID, grant.Config) {
		field("arg " + a)
	}
	for _, m := range mounts {
		c := m.cfg
		field(fmt.Sprintf("mount %q root=%s prefix=%q readOnly=%t create=%t temp=%t tempBytes=%d", c.GuestPath, c.Root, c.Prefix, c.ReadOnly, c.Create, c.Temp, c.TempBytes))
	}
	l := limits
	field(fmt.Sprintf("limits timeout=%d memory=%d fuel=%d output=%d deterministic=%t", l.Timeout, l.MemoryBytes, l.Fuel, l.MaxOutputBytes, l.Deterministic))
	return hex.EncodeToString(h.Sum(nil))
}

// bootID names the machine's current boot (Linux); elsewhere an error,
// and no snapshot is stored.
var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", fmt.Errorf("empty boot id")
	}
	return id, nil
})

// builtWith names the version of wazero this binary was built with and,
// when the build recorded them, the main module's version and commit: a
// release's snapshots are not used by another release even if
// snapshotVersion was not changed.
var builtWith = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown build"
	}
	out := "main " + bi.Main.Path + "@" + bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
			out += " " + s.Key + "=" + s.Value
		}
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/tetratelabs/wazero" {
			out += "; " + d.Path + "@" + d.Version
			if d.Replace != nil {
				out += " => " + d.Replace.Path + "@" + d.Replace.Version
			}
		}
	}
	return out
})

// snapshotHeader is the stored form's metadata.
type snapshotHeader struct {
	Size    int      `json:"size"` // bytes of memory
	Globals []string `json:"globals"`
	Values  []uint64 `json:"values"`
	// Startup is what the start-up saw (record.go): calls from the
	// snapshot replay from it.
	Startup     *runner.Inputs `json:"startup,omitempty"`
	StartupLost string         `json:"startupLost,omitempty"`
}

// save stores fp under key (framed.go): the header, then the whole
// memory. The memory is stored whole, zeros included,
// so a load can use the bytes it read without copying them (a 4 MiB copy
// into fresh pages cost 4 ms, more than reading the file). A failed
// write only costs the next process its start-up.
func (c *snapshotCache) save(key string, fp *fastPath) {
	if len(fp.memory) > maxStoredSnapshot {
		return
	}
	out, err := frame(snapshotHeader{Size: len(fp.memory), Globals: fp.globals, Values: fp.values, Startup: fp.startup, StartupLost: fp.startupLost}, fp.memory)
	if err != nil {
		return
	}
	_ = c.files.Save(key, out)
}

// load returns the snapshot stored under key for rm, or nil when there
// is none, it is not well formed, its globals are not rm's, or its
// memory is over limit bytes.
func (c *snapshotCache) load(key string, rm *reactorModule, limit uint64) *fastPath {
	var h snapshotHeader
	mem, ok := unframe(c.files.Load(key, nil), &h)
	if !ok || h.Size != len(mem) || h.Size%(64<<10) != 0 || uint64(h.Size) > limit ||
		!slices.Equal(h.Globals, rm.globals) || len(h.Values) != len(h.Globals) {
		return nil
	}
	return &fastPath{globals: rm.globals, values: h.Values, memory: mem[:len(mem):len(mem)], startup: h.Startup, startupLost: h.StartupLost}
}

// touchFS is a mount of a start-up whose snapshot may be stored: the
// mount's file system, recording any use at all.
type touchFS struct {
	experimentalsys.FS
	touched *atomic.Bool
}

func (f touchFS) touch() { f.touched.Store(true) }

// OpenFile implements experimentalsys.FS. Opening the mount's root is not
// a use: wazero opens it to answer fd_prestat_get, which every Go guest
// calls at start-up for each preopen; listing it or reading its metadata
// is (touchDir).
func (f touchFS) OpenFile(path string, flag experimentalsys.Oflag, perm iofs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if path != "." {
		f.touch()
		return f.FS.OpenFile(path, flag, perm)
	}
	d, errno := f.FS.OpenFile(path, flag, perm)
	if errno != 0 {
		return nil, errno
	}
	return touchDir{File: d, touched: f.touched}, 0
}

// touchDir is a mount's root handle seen by a start-up whose snapshot may
// be stored.
type touchDir struct {
	experimentalsys.File
	touched *atomic.Bool
}

// Readdir implements experimentalsys.File.
func (d touchDir) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	d.touched.Store(true)
	return d.File.Readdir(n)
}

// Stat implements experimentalsys.File.
func (d touchDir) Stat() (sys.Stat_t, experimentalsys.Errno) {
	d.touched.Store(true)
	return d.File.Stat()
}

// Lstat implements experimentalsys.FS.
func (f touchFS) Lstat(path string) (sys.Stat_t, experimentalsys.Errno) {
	f.touch()
	return f.FS.Lstat(path)
}

// Stat implements experimentalsys.FS.
func (f touchFS) Stat(path string) (sys.Stat_t, experimentalsys.Errno) {
	f.touch()
	return f.FS.Stat(path)
}

// Mkdir implements experimentalsys.FS.
func (f touchFS) Mkdir(path string, perm iofs.FileMode) experimentalsys.Errno {
	f.touch()
	return f.FS.Mkdir(path, perm)
}

// Chmod implements experimentalsys.FS.
func (f touchFS) Chmod(path string, perm iofs.FileMode) experimentalsys.Errno {
	f.touch()
	return f.FS.Chmod(path, perm)
}

// Rename implements experimentalsys.FS.
func (f touchFS) Rename(from, to string) experimentalsys.Errno {
	f.touch()
	return f.FS.Rename(from, to)
}

// Rmdir implements experimentalsys.FS.
func (f touchFS) Rmdir(path string) experimentalsys.Errno {
	f.touch()
	return f.FS.Rmdir(path)
}

// Unlink implements experimentalsys.FS.
func (f touchFS) Unlink(path string) experimentalsys.Errno {
	f.touch()
	return f.FS.Unlink(path)
}

// Link implements experimentalsys.FS.
func (f touchFS) Link(oldPath, newPath string) experimentalsys.Errno {
	f.touch()
	return f.FS.Link(oldPath, newPath)
}

// Symlink implements experimentalsys.FS.
func (f touchFS) Symlink(oldPath, linkName string) experimentalsys.Errno {
	f.touch()
	return f.FS.Symlink(oldPath, linkName)
}

// Readlink implements experimentalsys.FS.
func (f touchFS) Readlink(path string) (string, experimentalsys.Errno) {
	f.touch()
	return f.FS.Readlink(path)
}

// Utimens implements experimentalsys.FS.
func (f touchFS) Utimens(path string, atim, mtim int64) experimentalsys.Errno {
	f.touch()
	return f.FS.Utimens(path, atim, mtim)
}
