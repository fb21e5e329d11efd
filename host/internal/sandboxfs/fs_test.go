package sandboxfs_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/agenthost/agenthost/host/internal/sandboxfs"
	"github.com/agenthost/agenthost/host/policy"
)

// fakeChecker grants by pattern: "x/**" matches everything under x, "**"
// everything, anything else exactly. Mocks are func-free here because the
// rules are data.
type fakeChecker struct {
	read, write map[policy.Root][]string
}

func match(pattern, rel string) bool {
	if pattern == "**" {
		return true
	}
	if dir, ok := strings.CutSuffix(pattern, "/**"); ok {
		return strings.HasPrefix(rel, dir+"/")
	}
	return pattern == rel
}

func (c fakeChecker) Allows(root policy.Root, rel string, write bool) bool {
	rules := c.read[root]
	if write {
		rules = c.write[root]
	}
	for _, p := range rules {
		if match(p, rel) {
			return true
		}
	}
	return false
}

func (c fakeChecker) CanList(root policy.Root, relDir string) bool {
	for _, p := range append(slices.Clone(c.read[root]), c.write[root]...) {
		if p == "**" || relDir == "." || strings.HasPrefix(p, relDir+"/") || match(p, relDir+"/x") {
			return true
		}
	}
	return false
}

func writeFile(t testing.TB, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// workspace builds:
//
//	outside.txt                 (next to the workspace)
//	ws/public.txt  ws/secret.txt  ws/data/a.txt  ws/out/old.txt
//	ws/link-ok -> public.txt      ws/link-secret -> secret.txt
//	ws/link-up -> ../outside.txt  ws/link-abs -> /etc/passwd
//	ws/data/link-back -> ../secret.txt  ws/loop -> loop
func workspace(t testing.TB) string {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	writeFile(t, filepath.Join(base, "outside.txt"), "outside")
	writeFile(t, filepath.Join(ws, "public.txt"), "public")
	writeFile(t, filepath.Join(ws, "secret.txt"), "secret")
	writeFile(t, filepath.Join(ws, "data", "a.txt"), "a")
	writeFile(t, filepath.Join(ws, "out", "old.txt"), "old")
	for link, target := range map[string]string{
		"link-ok":        "public.txt",
		"link-secret":    "secret.txt",
		"link-up":        "../outside.txt",
		"link-abs":       "/etc/passwd",
		"data/link-back": "../secret.txt",
		"loop":           "loop",
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

var grant = fakeChecker{
	read: map[policy.Root][]string{
		policy.RootWorkspace: {"public.txt", "data/**", "link-ok", "out/**"},
	},
	write: map[policy.Root][]string{
		policy.RootWorkspace: {"out/**"},
	},
}

func newFS(t *testing.T, cfg sandboxfs.Config) (*sandboxfs.FS, *sandboxfs.Denials) {
	t.Helper()
	d := sandboxfs.NewDenials(nil)
	cfg.Denials = d
	if cfg.Checker == nil {
		cfg.Checker = grant
	}
	if cfg.Root == "" {
		cfg.Root = policy.RootWorkspace
	}
	if cfg.GuestPath == "" {
		cfg.GuestPath = "/workspace"
	}
	f, err := sandboxfs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f, d
}

const (
	rd   = experimentalsys.O_RDONLY
	wr   = experimentalsys.O_WRONLY
	crt  = experimentalsys.O_WRONLY | experimentalsys.O_CREAT | experimentalsys.O_TRUNC
	rdir = experimentalsys.O_RDONLY | experimentalsys.O_DIRECTORY
)

func TestOpen(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		flag     experimentalsys.Oflag
		want     experimentalsys.Errno
		content  string // expected content for successful reads
		denyLine string // expected refusal line (substring)
	}{
		{name: "read allowed", path: "public.txt", flag: rd, content: "public"},
		{name: "read denied", path: "secret.txt", flag: rd, want: experimentalsys.EACCES, denyLine: "denied: open /workspace/secret.txt (read)"},
		{name: "glob read allowed", path: "data/a.txt", flag: rd, content: "a"},
		{name: "missing granted", path: "data/none.txt", flag: rd, want: experimentalsys.ENOENT},
		{name: "missing not granted", path: "none.txt", flag: rd, want: experimentalsys.EACCES, denyLine: "open /workspace/none.txt (read)"},
		{name: "symlink inside to granted", path: "link-ok", flag: rd, content: "public"},
		{name: "symlink inside to denied", path: "link-secret", flag: rd, want: experimentalsys.EACCES, denyLine: "/workspace/link-secret (read)"},
		{name: "symlink from granted dir to denied", path: "data/link-back", flag: rd, want: experimentalsys.EACCES, denyLine: "/workspace/data/link-back"},
		{name: "symlink escape up", path: "link-up", flag: rd, want: experimentalsys.EACCES, denyLine: "leaves /workspace"},
		{name: "symlink absolute", path: "link-abs", flag: rd, want: experimentalsys.EACCES, denyLine: "leaves /workspace"},
		{name: "dotdot escape", path: "../outside.txt", flag: rd, want: experimentalsys.EACCES, denyLine: "leaves /workspace"},
		{name: "dotdot inside", path: "data/../public.txt", flag: rd, content: "public"},
		{name: "symlink loop", path: "loop", flag: rd, want: experimentalsys.ELOOP},
		{name: "nofollow on link", path: "link-ok", flag: rd | experimentalsys.O_NOFOLLOW, want: experimentalsys.ELOOP},
		{name: "write read-only file", path: "public.txt", flag: wr, want: experimentalsys.EACCES, denyLine: "open /workspace/public.txt (write)"},
		{name: "create in write glob", path: "out/new.txt", flag: crt},
		{name: "create outside write glob", path: "new.txt", flag: crt, want: experimentalsys.EACCES, denyLine: "new.txt (write)"},
		{name: "truncate granted", path: "out/old.txt", flag: crt},
		{name: "rdwr needs both", path: "data/a.txt", flag: experimentalsys.O_RDWR, want: experimentalsys.EACCES, denyLine: "(read-write)"},
		{name: "open listable dir", path: "data", flag: rdir},
		{name: "open root", path: ".", flag: rdir},
		{name: "directory flag on file", path: "public.txt", flag: rdir, want: experimentalsys.ENOTDIR},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, d := newFS(t, sandboxfs.Config{Dir: workspace(t)})
			file, errno := f.OpenFile(tc.path, tc.flag, 0o644)
			if errno != tc.want {
				t.Fatalf("OpenFile(%q) errno = %v, want %v", tc.path, errno, tc.want)
			}
			lines := d.Lines()
			if tc.denyLine == "" && len(lines) != 0 {
				t.Fatalf("unexpected refusals %q", lines)
			}
			if tc.denyLine != "" && (len(lines) != 1 || !strings.Contains(lines[0], tc.denyLine)) {
				t.Fatalf("refusals = %q, want one containing %q", lines, tc.denyLine)
			}
			if errno != 0 {
				return
			}
			defer file.Close()
			if tc.content != "" {
				buf := make([]byte, 64)
				n, errno := file.Read(buf)
				if errno != 0 || string(buf[:n]) != tc.content {
					t.Fatalf("Read = %q, %v; want %q", buf[:n], errno, tc.content)
				}
			}
		})
	}
}

func TestOpen_writeThenReadBack(t *testing.T) {
	ws := workspace(t)
	f, _ := newFS(t, sandboxfs.Config{Dir: ws})
	file, errno := f.OpenFile("out/new.txt", crt, 0o644)
	if errno != 0 {
		t.Fatal(errno)
	}
	if _, errno := file.Write([]byte("hello")); errno != 0 {
		t.Fatal(errno)
	}
	if off, errno := file.Seek(0, io.SeekCurrent); errno != 0 || off != 5 {
		t.Fatalf("Seek = %d, %v", off, errno)
	}
	file.Close()
	got, err := os.ReadFile(filepath.Join(ws, "out", "new.txt"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("host sees %q, %v", got, err)
	}
}

func TestReadOnlyMount_refusesWrites(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tool.wasm"), "x")
	everything := fakeChecker{
		read:  map[policy.Root][]string{policy.RootTool: {"**"}},
		write: map[policy.Root][]string{policy.RootTool: {"**"}},
	}
	f, d := newFS(t, sandboxfs.Config{Root: policy.RootTool, Dir: dir, GuestPath: "/tool", ReadOnly: true, Checker: everything})
	if _, errno := f.OpenFile("tool.wasm", rd, 0); errno != 0 {
		t.Fatalf("read: %v", errno)
	}
	for name, errno := range map[string]experimentalsys.Errno{
		"open":  func() experimentalsys.Errno { _, e := f.OpenFile("tool.wasm", wr, 0); return e }(),
		"mkdir": f.Mkdir("sub", 0o755),
		"rm":    f.Unlink("tool.wasm"),
	} {
		if errno != experimentalsys.EACCES {
			t.Errorf("%s: errno %v, want EACCES", name, errno)
		}
	}
	if d.Count() != 3 {
		t.Fatalf("refusals %q", d.Lines())
	}
}

func TestPathOps(t *testing.T) {
	tests := []struct {
		name string
		op   func(f *sandboxfs.FS) experimentalsys.Errno
		want experimentalsys.Errno
	}{
		{"mkdir allowed", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Mkdir("out/sub", 0o755) }, 0},
		{"mkdir denied", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Mkdir("sub", 0o755) }, experimentalsys.EACCES},
		{"unlink allowed", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Unlink("out/old.txt") }, 0},
		{"unlink denied", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Unlink("public.txt") }, experimentalsys.EACCES},
		{"unlink symlink itself denied", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Unlink("link-ok") }, experimentalsys.EACCES},
		{"rmdir denied", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Rmdir("data") }, experimentalsys.EACCES},
		{"rename allowed", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Rename("out/old.txt", "out/new.txt") }, 0},
		{"rename from read-only", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Rename("public.txt", "out/p.txt") }, experimentalsys.EACCES},
		{"rename to outside", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Rename("out/old.txt", "../x.txt") }, experimentalsys.EACCES},
		{"link allowed", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Link("out/old.txt", "out/l.txt") }, 0},
		{"link of read-only source", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Link("public.txt", "out/l.txt") }, experimentalsys.EACCES},
		{"link of secret", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Link("secret.txt", "out/l.txt") }, experimentalsys.EACCES},
		{"symlink always refused", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Symlink("public.txt", "out/s") }, experimentalsys.EACCES},
		{"chmod allowed", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Chmod("out/old.txt", 0o600) }, 0},
		{"chmod denied", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Chmod("public.txt", 0o777) }, experimentalsys.EACCES},
		{"utimes allowed", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Utimens("out/old.txt", 0, 0) }, 0},
		{"utimes denied", func(f *sandboxfs.FS) experimentalsys.Errno { return f.Utimens("public.txt", 0, 0) }, experimentalsys.EACCES},
		{"stat allowed", func(f *sandboxfs.FS) experimentalsys.Errno { _, e := f.Stat("public.txt"); return e }, 0},
		{"stat denied", func(f *sandboxfs.FS) experimentalsys.Errno { _, e := f.Stat("secret.txt"); return e }, experimentalsys.EACCES},
		{"stat through link denied", func(f *sandboxfs.FS) experimentalsys.Errno { _, e := f.Stat("link-secret"); return e }, experimentalsys.EACCES},
		{"lstat of link name allowed", func(f *sandboxfs.FS) experimentalsys.Errno { _, e := f.Lstat("link-ok"); return e }, 0},
		{"stat escape", func(f *sandboxfs.FS) experimentalsys.Errno { _, e := f.Stat("link-up"); return e }, experimentalsys.EACCES},
		{"stat missing granted", func(f *sandboxfs.FS) experimentalsys.Errno { _, e := f.Stat("out/none"); return e }, experimentalsys.ENOENT},
		{"readlink allowed", func(f *sandboxfs.FS) experimentalsys.Errno { _, e := f.Readlink("link-ok"); return e }, 0},
		{"readlink denied", func(f *sandboxfs.FS) experimentalsys.Errno { _, e := f.Readlink("link-up"); return e }, experimentalsys.EACCES},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, d := newFS(t, sandboxfs.Config{Dir: workspace(t)})
			if got := tc.op(f); got != tc.want {
				t.Fatalf("errno = %v, want %v (refusals %q)", got, tc.want, d.Lines())
			}
			if (tc.want == experimentalsys.EACCES) != (d.Count() > 0) {
				t.Fatalf("refusals %q for errno %v", d.Lines(), tc.want)
			}
		})
	}
}

func readdirNames(t *testing.T, f *sandboxfs.FS, dir string) ([]string, experimentalsys.Errno) {
	t.Helper()
	file, errno := f.OpenFile(dir, rdir, 0)
	if errno != 0 {
		return nil, errno
	}
	defer file.Close()
	var names []string
	for {
		ents, errno := file.Readdir(2)
		if errno != 0 {
			return nil, errno
		}
		for _, e := range ents {
			names = append(names, e.Name)
		}
		if len(ents) < 2 {
			break
		}
	}
	slices.Sort(names)
	return names, 0
}

func TestReaddir_filtersEntries(t *testing.T) {
	f, d := newFS(t, sandboxfs.Config{Dir: workspace(t)})
	got, errno := readdirNames(t, f, ".")
	if errno != 0 {
		t.Fatal(errno)
	}
	want := []string{"data", "link-ok", "out", "public.txt"}
	if !slices.Equal(got, want) {
		t.Fatalf("root lists %q, want %q", got, want)
	}
	if d.Count() != 0 {
		t.Fatalf("refusals %q", d.Lines())
	}
}

func TestReaddir_rewind(t *testing.T) {
	f, _ := newFS(t, sandboxfs.Config{Dir: workspace(t)})
	file, errno := f.OpenFile("data", rdir, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	defer file.Close()
	first, _ := file.Readdir(-1)
	if _, errno := file.Seek(0, io.SeekStart); errno != 0 {
		t.Fatal(errno)
	}
	again, _ := file.Readdir(-1)
	if len(first) != 2 || len(again) != 2 {
		t.Fatalf("first %v, after rewind %v", first, again)
	}
}

func TestReaddir_notListable(t *testing.T) {
	ws := workspace(t)
	if err := os.Mkdir(filepath.Join(ws, "private"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, d := newFS(t, sandboxfs.Config{Dir: ws})
	if _, errno := readdirNames(t, f, "private"); errno != experimentalsys.EACCES {
		t.Fatalf("errno %v, want EACCES", errno)
	}
	none := fakeChecker{}
	g, d2 := newFS(t, sandboxfs.Config{Dir: ws, Checker: none})
	file, errno := g.OpenFile(".", rdir, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	defer file.Close()
	if _, errno := file.Readdir(-1); errno != experimentalsys.EACCES {
		t.Fatalf("root listing with no grant: %v", errno)
	}
	if d.Count() != 1 || d2.Count() != 1 {
		t.Fatalf("refusals %q %q", d.Lines(), d2.Lines())
	}
}

func TestPrefixMount(t *testing.T) {
	ws := workspace(t)
	f, d := newFS(t, sandboxfs.Config{Dir: filepath.Join(ws, "data"), Prefix: "data", GuestPath: "/mnt"})
	if _, errno := f.OpenFile("a.txt", rd, 0); errno != 0 {
		t.Fatalf("a.txt via mount: %v", errno)
	}
	// link-back points to ../secret.txt: outside the mounted folder.
	if _, errno := f.OpenFile("link-back", rd, 0); errno != experimentalsys.EACCES {
		t.Fatalf("link-back via mount: %v", errno)
	}
	if lines := d.Lines(); len(lines) != 1 || !strings.Contains(lines[0], "/mnt/link-back") {
		t.Fatalf("refusals %q", lines)
	}
	if _, err := sandboxfs.New(sandboxfs.Config{Dir: ws, Prefix: "../x", Checker: grant, Denials: d}); err == nil {
		t.Fatal("escaping prefix accepted")
	}
}

func TestPrefixMount_symlinkedFolderCannotEscape(t *testing.T) {
	ws := workspace(t)
	outside := filepath.Join(filepath.Dir(ws), "elsewhere")
	writeFile(t, filepath.Join(outside, "a.txt"), "outside")
	if err := os.Symlink(outside, filepath.Join(ws, "linked")); err != nil {
		t.Fatal(err)
	}
	c := fakeChecker{read: map[policy.Root][]string{policy.RootWorkspace: {"linked/**"}}}
	f, d := newFS(t, sandboxfs.Config{Dir: filepath.Join(ws, "linked"), Prefix: "linked", GuestPath: "/mnt", Checker: c})
	if _, errno := f.OpenFile("a.txt", rd, 0); errno != experimentalsys.EACCES {
		t.Fatalf("read through a mount folder linked outside: %v", errno)
	}
	if lines := d.Lines(); len(lines) != 1 || !strings.Contains(lines[0], "mount /mnt") {
		t.Fatalf("refusals %q", lines)
	}
	if _, err := sandboxfs.New(sandboxfs.Config{Dir: filepath.Join(ws, "other"), Prefix: "data", Checker: grant, Denials: d}); err == nil {
		t.Fatal("dir not ending with prefix accepted")
	}
}

func TestTempMount_inMemory(t *testing.T) {
	scratch := t.TempDir()
	t.Setenv("TMPDIR", scratch)
	d := sandboxfs.NewDenials(nil)
	f, err := sandboxfs.New(sandboxfs.Config{Root: policy.RootTmp, Temp: true, GuestPath: "/tmp", Checker: fakeChecker{}, Denials: d})
	if err != nil {
		t.Fatal(err)
	}
	if errno := f.Mkdir("ro", 0o755); errno != 0 {
		t.Fatal(errno)
	}
	file, errno := f.OpenFile("ro/x", crt, 0o644)
	if errno != 0 {
		t.Fatal(errno)
	}
	if n, errno := file.Write([]byte("kept")); n != 4 || errno != 0 {
		t.Fatal(n, errno)
	}
	file.Close()
	if errno := f.Chmod("ro", 0o500); errno != 0 {
		t.Fatal(errno)
	}
	if st, errno := f.Stat("ro/x"); errno != 0 || st.Size != 4 {
		t.Fatalf("stat %+v %v", st, errno)
	}
	if entries, _ := os.ReadDir(scratch); len(entries) != 0 || f.Dir() != "" {
		t.Fatalf("a temp mount wrote to the host: %v, dir %q", entries, f.Dir())
	}
	if d.Count() != 0 {
		t.Fatalf("refusals %q", d.Lines())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, errno := f.OpenFile("ro/x", rd, 0); errno != experimentalsys.EBADF {
		t.Fatalf("use after close: %v", errno)
	}
}

func TestReopen(t *testing.T) {
	d := sandboxfs.NewDenials(nil)
	f, err := sandboxfs.New(sandboxfs.Config{Root: policy.RootTmp, Temp: true, GuestPath: "/tmp", Checker: fakeChecker{}, Denials: d})
	if err != nil {
		t.Fatal(err)
	}
	file, errno := f.OpenFile("x", crt, 0o644)
	if errno != 0 {
		t.Fatal(errno)
	}
	file.Close()
	if errno := f.Symlink("x", "y"); errno != experimentalsys.EPERM {
		t.Fatalf("symlink: %v", errno)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f.Reopen()
	d.Reset(nil)
	if _, errno := f.OpenFile("x", rd, 0); errno != experimentalsys.ENOENT {
		t.Fatalf("previous call's file visible after Reopen: %v", errno)
	}
	if d.Count() != 0 {
		t.Fatalf("refusals %q", d.Lines())
	}
	_ = f.Close()
}

func TestCreateMount(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache", "tool")
	c := fakeChecker{write: map[policy.Root][]string{policy.RootCache: {"**"}}}
	f, _ := newFS(t, sandboxfs.Config{Root: policy.RootCache, Dir: dir, Create: true, GuestPath: "/cache", Checker: c})
	file, errno := f.OpenFile("k", crt, 0o644)
	if errno != 0 {
		t.Fatal(errno)
	}
	file.Close()
	if _, err := os.Stat(filepath.Join(dir, "k")); err != nil {
		t.Fatal(err)
	}
}

func TestDeny(t *testing.T) {
	d := sandboxfs.NewDenials(nil)
	fs := sandboxfs.NewDeny(d)
	root, errno := fs.OpenFile(".", rdir, 0)
	if errno != 0 {
		t.Fatalf("root: %v", errno)
	}
	if ents, errno := root.Readdir(-1); errno != 0 || len(ents) != 0 {
		t.Fatalf("root lists %v, %v", ents, errno)
	}
	root.Close()
	if _, errno := fs.OpenFile("etc/passwd", rd, 0); errno != experimentalsys.EACCES {
		t.Fatalf("etc/passwd: %v", errno)
	}
	if _, errno := fs.Stat("home"); errno != experimentalsys.EACCES {
		t.Fatalf("stat: %v", errno)
	}
	if errno := fs.Mkdir("x", 0o755); errno != experimentalsys.EACCES {
		t.Fatalf("mkdir: %v", errno)
	}
	want := "denied: open /etc/passwd (read): outside every mount"
	if lines := d.Lines(); len(lines) != 3 || lines[0] != want {
		t.Fatalf("refusals %q", lines)
	}
}

func TestNew_invalid(t *testing.T) {
	d := sandboxfs.NewDenials(nil)
	for name, cfg := range map[string]sandboxfs.Config{
		"no checker":   {Dir: "/x", Denials: d},
		"no denials":   {Dir: "/x", Checker: grant},
		"dir and temp": {Dir: "/x", Temp: true, Checker: grant, Denials: d},
		"neither":      {Checker: grant, Denials: d},
	} {
		if _, err := sandboxfs.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestDenials_bounded(t *testing.T) {
	hooked := 0
	d := sandboxfs.NewDenials(func(string) { hooked++ })
	for range sandboxfs.MaxDenialLines + 50 {
		d.Record("denied: x")
	}
	if d.Count() != sandboxfs.MaxDenialLines+50 || len(d.Lines()) != sandboxfs.MaxDenialLines || hooked != d.Count() {
		t.Fatalf("count %d lines %d hooked %d", d.Count(), len(d.Lines()), hooked)
	}
}

func TestDenials_hook(t *testing.T) {
	var got []string
	d := sandboxfs.NewDenials(func(line string) { got = append(got, line) })
	d.Record("denied: x")
	if d.Count() != 1 || len(got) != 1 || got[0] != "denied: x" {
		t.Fatalf("count %d hook %q", d.Count(), got)
	}
}

// TestRenameSubtree pins the subtree check of a rename: with a grant that
// may write "drop/**" and "pub/**" but read only "pub/**", moving the
// folder drop/secret (whose files are write-only) under pub/ would make
// them readable, and is refused; the real policy matcher decides here.
func TestRenameSubtree(t *testing.T) {
	checker := fakeChecker{
		read:  map[policy.Root][]string{policy.RootWorkspace: {"pub/**"}},
		write: map[policy.Root][]string{policy.RootWorkspace: {"drop/**", "pub/**"}},
	}
	tests := []struct {
		name     string
		from, to string
		want     experimentalsys.Errno
	}{
		{"folder of unreadable files into a readable place", "drop/secret", "pub/secret", experimentalsys.EACCES},
		{"unreadable file into a readable place", "drop/plain.txt", "pub/plain.txt", experimentalsys.EACCES},
		{"readable folder within the readable place", "pub/ok", "pub/ok2", 0},
		{"readable folder into the drop", "pub/ok", "drop/ok", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			writeFile(t, filepath.Join(ws, "drop", "secret", "key.txt"), "k")
			writeFile(t, filepath.Join(ws, "drop", "plain.txt"), "p")
			writeFile(t, filepath.Join(ws, "pub", "ok", "a.txt"), "a")
			f, _ := newFS(t, sandboxfs.Config{Dir: ws, Checker: checker})
			if got := f.Rename(tc.from, tc.to); got != tc.want {
				t.Fatalf("Rename(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
			}
		})
	}
}
