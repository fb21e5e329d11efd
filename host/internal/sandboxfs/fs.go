package sandboxfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agenthost/agenthost/host/policy"
)

// maxSymlinkHops bounds symbolic link resolution, like the kernel's 40.
const maxSymlinkHops = 40

// Config describes one mount.
type Config struct {
	// Root is the grant root the rules are checked against.
	Root policy.Root
	// Dir is the host folder backing the mount. It must be empty when
	// Temp is set.
	Dir string
	// Prefix is the root-relative folder the mount shows ("" = the whole
	// root). Rules see Prefix + "/" + the mount-relative path. Used for
	// extra mounts into the workspace. Dir must then be the root's folder
	// joined with Prefix: the mount folder is opened through an os.Root
	// on the root's folder, so a mount folder that is (or passes through)
	// a symlink cannot leave the root.
	Prefix string
	// GuestPath is where the guest sees the mount (e.g. "/workspace"),
	// used in refusal lines.
	GuestPath string
	// Checker decides each access.
	Checker Checker
	// ReadOnly refuses every write whatever the Checker says ($TOOL).
	ReadOnly bool
	// Create makes Dir (and its parents) on first use ($CACHE).
	Create bool
	// Temp makes the mount an empty folder in memory, dropped on Close
	// ($TMP; see memTmp). The Checker is not asked: $TMP is always
	// readable and writable.
	Temp bool
	// TempBytes is the most a Temp mount's files may hold (each entry
	// also counts nodeCost bytes); 0 means DefaultTempBytes.
	TempBytes int64
	// Denials receives every refusal. Required.
	Denials *Denials
}

// FS is a grant-checking experimental/sys.FS over one host folder. Create
// it with [New] for each call and Close it after the call.
type FS struct {
	experimentalsys.UnimplementedFS

	cfg    Config
	prefix string // cleaned Prefix, "" for none
	base   string // the root's folder when prefix is set

	mu     sync.Mutex
	opened bool
	closed bool
	root   *os.Root
	dir    string
	err    error
	mem    *memTmp // a Temp mount's files, made on first use
}

// DefaultTempBytes is a Temp mount's limit when Config.TempBytes is 0.
const DefaultTempBytes = 256 << 20

// New returns the FS of one mount. The host folder is opened lazily, on
// the guest's first access.
func New(cfg Config) (*FS, error) {
	if cfg.Checker == nil {
		return nil, errors.New("sandboxfs: nil checker")
	}
	if cfg.Denials == nil {
		return nil, errors.New("sandboxfs: nil denials")
	}
	if cfg.Temp == (cfg.Dir != "") {
		return nil, fmt.Errorf("sandboxfs: mount %s: exactly one of Dir and Temp must be set", cfg.GuestPath)
	}
	prefix := ""
	if cfg.Prefix != "" {
		prefix = path.Clean(strings.ReplaceAll(cfg.Prefix, "\\", "/"))
		if prefix == "." {
			prefix = ""
		}
		if path.IsAbs(prefix) || prefix == ".." || strings.HasPrefix(prefix, "../") {
			return nil, fmt.Errorf("sandboxfs: mount %s: prefix %q leaves its root", cfg.GuestPath, cfg.Prefix)
		}
	}
	out := &FS{cfg: cfg, prefix: prefix}
	if prefix != "" {
		base, ok := strings.CutSuffix(filepath.Clean(cfg.Dir), string(filepath.Separator)+filepath.FromSlash(prefix))
		if !ok || base == "" {
			return nil, fmt.Errorf("sandboxfs: mount %s: dir %q does not end with prefix %q", cfg.GuestPath, cfg.Dir, cfg.Prefix)
		}
		out.base = base
	}
	return out, nil
}

// GuestPath returns where the guest sees the mount.
func (f *FS) GuestPath() string { return f.cfg.GuestPath }

// tempBytes is a Temp mount's limit.
func (c Config) tempBytes() int64 {
	if c.TempBytes > 0 {
		return c.TempBytes
	}
	return DefaultTempBytes
}

// Dir returns the host folder in use ("" for a Temp mount, which has
// none, and before the first access).
func (f *FS) Dir() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dir
}

// Close releases the host folder, or drops a Temp mount's files.
func (f *FS) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	if f.mem != nil {
		f.mem.close()
		f.mem = nil
	}
	if f.root != nil {
		err := f.root.Close()
		f.root = nil
		return err
	}
	return nil
}

// Reopen makes a closed FS usable by another call: the host folder is
// opened again on first use (a Temp mount gets a new folder). The caller
// must have closed f and must not share it between concurrent calls.
func (f *FS) Reopen() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.root != nil {
		_ = f.root.Close()
	}
	f.opened, f.closed, f.root, f.dir, f.err = false, false, nil, "", nil
}

// newTemp returns an empty Temp mount whose first refusal for lack of
// room is recorded with the denials.
func (f *FS) newTemp() *memTmp {
	limit := f.cfg.tempBytes()
	return newMemTmp(limit, func() {
		f.cfg.Denials.Record(fmt.Sprintf("denied: write %s: full (its files may hold %d bytes)", f.cfg.GuestPath, limit))
	})
}

// closedTemp is what a closed Temp mount serves: every operation fails
// with EBADF.
var closedTemp = &memTmp{closed: true}

// temp returns a Temp mount's files, made on first use (a call that never
// touches /tmp costs nothing); ok is false for another mount.
func (f *FS) temp() (m *memTmp, ok bool) {
	if !f.cfg.Temp {
		return nil, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return closedTemp, true
	case f.mem == nil:
		f.mem = f.newTemp()
	}
	return f.mem, true
}

// open returns the root, opening (and creating) the host folder on first
// use.
func (f *FS) open() (*os.Root, experimentalsys.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, experimentalsys.EBADF
	}
	if !f.opened {
		f.opened = true
		f.root, f.dir, f.err = f.openLocked()
	}
	if f.err != nil {
		return nil, experimentalsys.UnwrapOSError(f.err)
	}
	return f.root, 0
}

func (f *FS) openLocked() (*os.Root, string, error) {
	dir := f.cfg.Dir
	if f.cfg.Create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, dir, fmt.Errorf("make %s: %w", dir, err)
		}
	}
	if f.base != "" {
		return f.openUnder(dir)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, dir, fmt.Errorf("open %s: %w", dir, err)
	}
	return r, dir, nil
}

// openUnder opens a Prefix mount's folder through an os.Root on the
// root's folder, refusing (and recording) a folder that leaves it.
func (f *FS) openUnder(dir string) (*os.Root, string, error) {
	parent, err := os.OpenRoot(f.base)
	if err != nil {
		return nil, dir, fmt.Errorf("open %s: %w", f.base, err)
	}
	defer parent.Close()
	r, err := parent.OpenRoot(filepath.FromSlash(f.prefix))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			f.cfg.Denials.Record(fmt.Sprintf("denied: mount %s: folder %s cannot be opened inside its root: %v", f.cfg.GuestPath, f.prefix, err))
			return nil, dir, errMountEscape
		}
		return nil, dir, fmt.Errorf("open %s: %w", dir, err)
	}
	return r, dir, nil
}

// errMountEscape is the open error of a mount whose folder leaves its
// root; the guest sees EACCES.
var errMountEscape error = syscall.EACCES

// guestName is the path the guest asked for, for refusal lines.
func (f *FS) guestName(p string) string {
	p = strings.TrimSuffix(p, "/")
	if p == "" || p == "." {
		return f.cfg.GuestPath
	}
	return strings.TrimSuffix(f.cfg.GuestPath, "/") + "/" + p
}

// deny records a refusal and returns EACCES.
func (f *FS) deny(op, p, mode, why string) experimentalsys.Errno {
	line := fmt.Sprintf("denied: %s %s (%s)", op, f.guestName(p), mode)
	if why != "" {
		line += ": " + why
	}
	f.cfg.Denials.Record(line)
	return experimentalsys.EACCES
}

// ruleRel maps a mount-relative canonical path to the root-relative path
// the rules see.
func (f *FS) ruleRel(rel string) string {
	if f.prefix == "" {
		return rel
	}
	if rel == "." {
		return f.prefix
	}
	return f.prefix + "/" + rel
}

func (f *FS) allows(rel string, write bool) bool {
	if write && f.cfg.ReadOnly {
		return false
	}
	return f.cfg.Checker.Allows(f.cfg.Root, f.ruleRel(rel), write)
}

func (f *FS) canList(rel string) bool {
	return f.cfg.Checker.CanList(f.cfg.Root, f.ruleRel(rel))
}

// visible reports whether the guest may learn that rel exists: it may
// read or write it, or list it.
func (f *FS) visible(rel string) bool {
	return rel == "." || f.allows(rel, false) || f.allows(rel, true) || f.canList(rel)
}

// errEscape is returned by resolve for a path or link leaving the mount.
var errEscape = errors.New("leaves the mount")

// resolve returns the canonical mount-relative path ("." for the root) of
// the guest path p, following symbolic links inside the mount (the last
// component only if followLast). A link with an absolute target, or any
// path that climbs above the mount, is errEscape. Components after the
// first missing one are joined lexically.
func resolve(root *os.Root, p string, followLast bool) (string, error) {
	pending := splitPath(p)
	var done []string
	hops := 0
	missing := false
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", errEscape
			}
			done = done[:len(done)-1]
			continue
		}
		if missing || (len(pending) == 0 && !followLast) {
			done = append(done, c)
			continue
		}
		cand := strings.Join(append(done[:len(done):len(done)], c), "/")
		fi, err := root.Lstat(cand)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				missing = true
				done = append(done, c)
				continue
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return "", syscall.ELOOP
		}
		target, err := root.Readlink(cand)
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) || strings.HasPrefix(target, "\\") {
			return "", errEscape
		}
		pending = append(splitPath(target), pending...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return strings.Join(done, "/"), nil
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// lookup opens the root and resolves p; a refusal is recorded under op
// and mode.
func (f *FS) lookup(op, p, mode string, followLast bool) (*os.Root, string, experimentalsys.Errno) {
	root, errno := f.open()
	if errno != 0 {
		return nil, "", errno
	}
	rel, err := resolve(root, p, followLast)
	if errors.Is(err, errEscape) {
		return nil, "", f.deny(op, p, mode, "path or symlink leaves "+f.cfg.GuestPath)
	}
	if err != nil {
		return nil, "", experimentalsys.UnwrapOSError(err)
	}
	return root, rel, 0
}

// OpenFile implements experimentalsys.FS.
func (f *FS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if m, ok := f.temp(); ok {
		return m.OpenFile(p, flag, perm)
	}
	acc := flag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY)
	read := acc != experimentalsys.O_WRONLY
	write := acc != experimentalsys.O_RDONLY || flag&(experimentalsys.O_CREAT|experimentalsys.O_TRUNC|experimentalsys.O_APPEND) != 0
	mode := accessMode(read, write)
	nofollow := flag&experimentalsys.O_NOFOLLOW != 0
	wantDir := flag&experimentalsys.O_DIRECTORY != 0 || strings.HasSuffix(p, "/")

	root, rel, errno := f.lookup("open", p, mode, !nofollow)
	if errno != 0 {
		return nil, errno
	}
	fi, statErr := root.Lstat(rel)
	exists := statErr == nil
	if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
		return nil, experimentalsys.UnwrapOSError(statErr)
	}
	if exists && fi.Mode()&fs.ModeSymlink != 0 {
		// Only reachable with O_NOFOLLOW: opening the link itself.
		if !f.visible(rel) {
			return nil, f.deny("open", p, mode, "")
		}
		return nil, experimentalsys.ELOOP
	}
	isDir := exists && fi.IsDir()
	switch {
	case isDir && write:
		if !f.allows(rel, true) {
			return nil, f.deny("open", p, mode, "")
		}
		return nil, experimentalsys.EISDIR
	case isDir:
		if !f.visible(rel) {
			return nil, f.deny("open", p, mode, "")
		}
	default:
		if (read && !f.allows(rel, false)) || (write && !f.allows(rel, true)) {
			return nil, f.deny("open", p, mode, "")
		}
		if exists && wantDir {
			return nil, experimentalsys.ENOTDIR
		}
	}
	osf, err := root.OpenFile(rel, osFlag(flag), perm)
	if err != nil {
		return nil, experimentalsys.UnwrapOSError(err)
	}
	st, err := osf.Stat()
	if err != nil {
		_ = osf.Close()
		return nil, experimentalsys.UnwrapOSError(err)
	}
	out := &file{
		fs:     f,
		f:      osf,
		rel:    rel,
		guest:  p,
		isDir:  st.IsDir(),
		append: flag&experimentalsys.O_APPEND != 0,
	}
	if out.File, errno = NewSeeker(out.seekTo); errno != 0 {
		_ = osf.Close()
		return nil, errno
	}
	return out, 0
}

func accessMode(read, write bool) string {
	switch {
	case read && write:
		return "read-write"
	case write:
		return "write"
	default:
		return "read"
	}
}

func osFlag(flag experimentalsys.Oflag) int {
	var out int
	switch flag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY) {
	case experimentalsys.O_RDWR:
		out = os.O_RDWR
	case experimentalsys.O_WRONLY:
		out = os.O_WRONLY
	default:
		out = os.O_RDONLY
	}
	if flag&experimentalsys.O_APPEND != 0 {
		out |= os.O_APPEND
	}
	if flag&experimentalsys.O_CREAT != 0 {
		out |= os.O_CREATE
	}
	if flag&experimentalsys.O_EXCL != 0 {
		out |= os.O_EXCL
	}
	if flag&(experimentalsys.O_SYNC|experimentalsys.O_DSYNC|experimentalsys.O_RSYNC) != 0 {
		out |= os.O_SYNC
	}
	if flag&experimentalsys.O_TRUNC != 0 {
		out |= os.O_TRUNC
	}
	return out
}

// Stat implements experimentalsys.FS.
func (f *FS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	if m, ok := f.temp(); ok {
		return m.Stat(p)
	}
	return f.stat(p, true)
}

// Lstat implements experimentalsys.FS.
func (f *FS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	if m, ok := f.temp(); ok {
		return m.Lstat(p)
	}
	return f.stat(p, false)
}

func (f *FS) stat(p string, follow bool) (sys.Stat_t, experimentalsys.Errno) {
	root, rel, errno := f.lookup("stat", p, "read", follow)
	if errno != 0 {
		return sys.Stat_t{}, errno
	}
	if !f.visible(rel) {
		return sys.Stat_t{}, f.deny("stat", p, "read", "")
	}
	fi, err := root.Lstat(rel)
	if err != nil {
		return sys.Stat_t{}, experimentalsys.UnwrapOSError(err)
	}
	return sys.NewStat_t(fi), 0
}

// Readlink implements experimentalsys.FS.
func (f *FS) Readlink(p string) (string, experimentalsys.Errno) {
	if m, ok := f.temp(); ok {
		return m.Readlink(p)
	}
	root, rel, errno := f.lookup("readlink", p, "read", false)
	if errno != 0 {
		return "", errno
	}
	if !f.visible(rel) {
		return "", f.deny("readlink", p, "read", "")
	}
	target, err := root.Readlink(rel)
	if err != nil {
		return "", experimentalsys.UnwrapOSError(err)
	}
	return target, 0
}

// writable resolves p for a modifying operation and checks the write rule.
func (f *FS) writable(op, p string, follow bool) (*os.Root, string, experimentalsys.Errno) {
	root, rel, errno := f.lookup(op, p, "write", follow)
	if errno != 0 {
		return nil, "", errno
	}
	if rel == "." || !f.allows(rel, true) {
		return nil, "", f.deny(op, p, "write", "")
	}
	return root, rel, 0
}

// Mkdir implements experimentalsys.FS.
func (f *FS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	if m, ok := f.temp(); ok {
		return m.Mkdir(p, perm)
	}
	root, rel, errno := f.writable("mkdir", p, false)
	if errno != 0 {
		return errno
	}
	return experimentalsys.UnwrapOSError(root.Mkdir(rel, perm))
}

// Chmod implements experimentalsys.FS.
func (f *FS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	if m, ok := f.temp(); ok {
		return m.Chmod(p, perm)
	}
	root, rel, errno := f.writable("chmod", p, true)
	if errno != 0 {
		return errno
	}
	return experimentalsys.UnwrapOSError(root.Chmod(rel, perm))
}

// Rename implements experimentalsys.FS.
func (f *FS) Rename(from, to string) experimentalsys.Errno {
	if m, ok := f.temp(); ok {
		return m.Rename(from, to)
	}
	root, fromRel, errno := f.writable("rename", from, false)
	if errno != 0 {
		return errno
	}
	_, toRel, errno := f.writable("rename", to, false)
	if errno != 0 {
		return errno
	}
	if why := f.moveGains(root, fromRel, toRel); why != "" {
		return f.deny("rename", from, "write", why)
	}
	return experimentalsys.UnwrapOSError(root.Rename(fromRel, toRel))
}

// maxMoveEntries bounds the subtree a rename of a folder may check.
const maxMoveEntries = 10_000

// moveGains checks a rename of fromRel to toRel entry by entry, for a
// folder its whole subtree: every entry must be writable where it is and
// where it goes, and must not become readable by moving (renaming a folder
// of unreadable files under a readable path would otherwise expose them).
// It returns why the move is refused, or "".
func (f *FS) moveGains(root *os.Root, fromRel, toRel string) string {
	fi, err := root.Lstat(fromRel)
	if err != nil {
		return "" // the rename itself reports it
	}
	check := func(oldRel, newRel string) string {
		switch {
		case !f.allows(oldRel, true):
			return f.guestName(oldRel) + " is not writable"
		case !f.allows(newRel, true):
			return "it would move " + f.guestName(oldRel) + " to " + f.guestName(newRel) + ", which is not writable"
		case f.allows(newRel, false) && !f.allows(oldRel, false):
			return "it would make " + f.guestName(oldRel) + ", which is not readable, readable as " + f.guestName(newRel)
		}
		return ""
	}
	if why := check(fromRel, toRel); why != "" || !fi.IsDir() {
		return why
	}
	n := 0
	var why string
	walkErr := fs.WalkDir(root.FS(), fromRel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			why = "its contents cannot be checked"
			return fs.SkipAll
		}
		if n++; n > maxMoveEntries {
			why = fmt.Sprintf("it holds more than %d entries to check", maxMoveEntries)
			return fs.SkipAll
		}
		if p == fromRel {
			return nil
		}
		if why = check(p, toRel+strings.TrimPrefix(p, fromRel)); why != "" {
			return fs.SkipAll
		}
		return nil
	})
	if walkErr != nil && why == "" {
		why = "its contents cannot be checked"
	}
	return why
}

// Rmdir implements experimentalsys.FS.
func (f *FS) Rmdir(p string) experimentalsys.Errno {
	if m, ok := f.temp(); ok {
		return m.Rmdir(p)
	}
	root, rel, errno := f.writable("rmdir", p, false)
	if errno != 0 {
		return errno
	}
	fi, err := root.Lstat(rel)
	if err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	if !fi.IsDir() {
		return experimentalsys.ENOTDIR
	}
	return experimentalsys.UnwrapOSError(root.Remove(rel))
}

// Unlink implements experimentalsys.FS.
func (f *FS) Unlink(p string) experimentalsys.Errno {
	if m, ok := f.temp(); ok {
		return m.Unlink(p)
	}
	root, rel, errno := f.writable("unlink", p, false)
	if errno != 0 {
		return errno
	}
	fi, err := root.Lstat(rel)
	if err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	if fi.IsDir() {
		return experimentalsys.EISDIR
	}
	return experimentalsys.UnwrapOSError(root.Remove(rel))
}

// Link implements experimentalsys.FS. The source must be both readable
// and writable under the grant: a hard link is a second name for the same
// data, so it must not widen what the guest can read or change.
func (f *FS) Link(oldPath, newPath string) experimentalsys.Errno {
	if m, ok := f.temp(); ok {
		return m.Link(oldPath, newPath)
	}
	root, oldRel, errno := f.lookup("link", oldPath, "read-write", false)
	if errno != 0 {
		return errno
	}
	if !f.allows(oldRel, false) || !f.allows(oldRel, true) {
		return f.deny("link", oldPath, "read-write", "")
	}
	_, newRel, errno := f.writable("link", newPath, false)
	if errno != 0 {
		return errno
	}
	return experimentalsys.UnwrapOSError(root.Link(oldRel, newRel))
}

// Symlink implements experimentalsys.FS. Guests cannot create symbolic
// links: a link could be swapped between the check and the use of a path
// by a concurrent call, so every link the resolver sees is the operator's.
func (f *FS) Symlink(_, linkName string) experimentalsys.Errno {
	if m, ok := f.temp(); ok {
		return m.Symlink("", linkName)
	}
	return f.deny("symlink", linkName, "write", "guests cannot create symbolic links")
}

// Utimens implements experimentalsys.FS.
func (f *FS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	if m, ok := f.temp(); ok {
		return m.Utimens(p, atim, mtim)
	}
	root, rel, errno := f.writable("utimes", p, true)
	if errno != 0 {
		return errno
	}
	return chtimes(root, rel, atim, mtim)
}

func chtimes(root *os.Root, rel string, atim, mtim int64) experimentalsys.Errno {
	return experimentalsys.UnwrapOSError(root.Chtimes(rel, nanoTime(atim), nanoTime(mtim)))
}

// nanoTime converts a WASI timestamp; UTIME_OMIT becomes the zero time,
// which os.Chtimes leaves unchanged.
func nanoTime(ns int64) time.Time {
	if ns == experimentalsys.UTIME_OMIT {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Interface guards
var _ experimentalsys.FS = (*FS)(nil)
