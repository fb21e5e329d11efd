package sandboxfs

import (
	"encoding/binary"
	"io"
	"io/fs"
	"strings"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

const (
	oRead   = experimentalsys.O_RDONLY
	oWrite  = experimentalsys.O_WRONLY
	oRW     = experimentalsys.O_RDWR
	oCreate = experimentalsys.O_WRONLY | experimentalsys.O_CREAT | experimentalsys.O_TRUNC
)

// memWithFiles returns a memTmp holding d/ (0755) and d/f ("hello").
func memWithFiles(t *testing.T, limit int64) *memTmp {
	t.Helper()
	m := newMemTmp(limit, nil)
	if errno := m.Mkdir("d", 0o755); errno != 0 {
		t.Fatal(errno)
	}
	f, errno := m.OpenFile("d/f", oCreate, 0o644)
	if errno != 0 {
		t.Fatal(errno)
	}
	if _, errno := f.Write([]byte("hello")); errno != 0 {
		t.Fatal(errno)
	}
	f.Close()
	return m
}

func TestMemTmp_errors(t *testing.T) {
	open := func(p string, flag experimentalsys.Oflag) func(m *memTmp) experimentalsys.Errno {
		return func(m *memTmp) experimentalsys.Errno {
			f, errno := m.OpenFile(p, flag, 0o644)
			if errno == 0 {
				f.Close()
			}
			return errno
		}
	}
	tests := []struct {
		name string
		op   func(m *memTmp) experimentalsys.Errno
		want experimentalsys.Errno
	}{
		{"open a file", open("d/f", oRead), 0},
		{"open missing", open("d/none", oRead), experimentalsys.ENOENT},
		{"create in a missing folder", open("none/f", oCreate), experimentalsys.ENOENT},
		{"create under a file", open("d/f/g", oCreate), experimentalsys.ENOTDIR},
		{"exclusive create of an existing file", open("d/f", oCreate|experimentalsys.O_EXCL), experimentalsys.EEXIST},
		{"a file as a folder", open("d/f", oRead|experimentalsys.O_DIRECTORY), experimentalsys.ENOTDIR},
		{"a folder for writing", open("d", oWrite), experimentalsys.EISDIR},
		{"dot-dots stay at the top", open("../../d/../d/f", oRead), 0},
		{"a name longer than 255 bytes", open(strings.Repeat("n", 256), oCreate), experimentalsys.ENAMETOOLONG},
		{"a folder name longer than 255 bytes", open(strings.Repeat("n", 256)+"/f", oRead), experimentalsys.ENAMETOOLONG},
		{"a name of 255 bytes", open(strings.Repeat("n", 255), oCreate), 0},
		{"mkdir of an existing name", func(m *memTmp) experimentalsys.Errno { return m.Mkdir("d/f", 0o755) }, experimentalsys.EEXIST},
		{"mkdir of the top", func(m *memTmp) experimentalsys.Errno { return m.Mkdir(".", 0o755) }, experimentalsys.EEXIST},
		{"rmdir of a full folder", func(m *memTmp) experimentalsys.Errno { return m.Rmdir("d") }, experimentalsys.ENOTEMPTY},
		{"rmdir of a file", func(m *memTmp) experimentalsys.Errno { return m.Rmdir("d/f") }, experimentalsys.ENOTDIR},
		{"rmdir of the top", func(m *memTmp) experimentalsys.Errno { return m.Rmdir("") }, experimentalsys.EINVAL},
		{"unlink of a folder", func(m *memTmp) experimentalsys.Errno { return m.Unlink("d") }, experimentalsys.EISDIR},
		{"unlink of a missing file", func(m *memTmp) experimentalsys.Errno { return m.Unlink("d/none") }, experimentalsys.ENOENT},
		{"rename a folder into itself", func(m *memTmp) experimentalsys.Errno { return m.Rename("d", "d/e") }, experimentalsys.EINVAL},
		{"rename a file over a folder", func(m *memTmp) experimentalsys.Errno {
			_ = m.Mkdir("e", 0o755)
			return m.Rename("d/f", "e")
		}, experimentalsys.EISDIR},
		{"rename a folder over a file", func(m *memTmp) experimentalsys.Errno { return m.Rename("d", "d/f") }, experimentalsys.EINVAL},
		{"rename a folder over a full folder", func(m *memTmp) experimentalsys.Errno {
			_ = m.Mkdir("e", 0o755)
			return m.Rename("e", "d")
		}, experimentalsys.ENOTEMPTY},
		{"rename the top", func(m *memTmp) experimentalsys.Errno { return m.Rename(".", "x") }, experimentalsys.EINVAL},
		{"rename a file", func(m *memTmp) experimentalsys.Errno { return m.Rename("d/f", "g") }, 0},
		{"hard link", func(m *memTmp) experimentalsys.Errno { return m.Link("d/f", "g") }, experimentalsys.EPERM},
		{"symbolic link", func(m *memTmp) experimentalsys.Errno { return m.Symlink("d/f", "g") }, experimentalsys.EPERM},
		{"readlink of a file", func(m *memTmp) experimentalsys.Errno { _, errno := m.Readlink("d/f"); return errno }, experimentalsys.EINVAL},
		{"write to a read-only file", func(m *memTmp) experimentalsys.Errno {
			_ = m.Chmod("d/f", 0o444)
			return open("d/f", oWrite)(m)
		}, experimentalsys.EACCES},
		{"read a write-only file", func(m *memTmp) experimentalsys.Errno {
			_ = m.Chmod("d/f", 0o200)
			return open("d/f", oRead)(m)
		}, experimentalsys.EACCES},
		{"create in a read-only folder", func(m *memTmp) experimentalsys.Errno {
			_ = m.Chmod("d", 0o555)
			return open("d/g", oCreate)(m)
		}, experimentalsys.EACCES},
		{"remove from a read-only folder", func(m *memTmp) experimentalsys.Errno {
			_ = m.Chmod("d", 0o555)
			return m.Unlink("d/f")
		}, experimentalsys.EACCES},
		{"closed", func(m *memTmp) experimentalsys.Errno {
			m.close()
			return open("d/f", oRead)(m)
		}, experimentalsys.EBADF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := memWithFiles(t, 1<<20)
			if got := tc.op(m); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			checkCharges(t, m)
		})
	}
}

func TestMemTmp_file(t *testing.T) {
	m := memWithFiles(t, 1<<20)
	f, errno := m.OpenFile("d/f", oRW, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	defer f.Close()
	buf := make([]byte, 16)
	if n, _ := f.Read(buf); string(buf[:n]) != "hello" {
		t.Fatalf("read %q", buf[:n])
	}
	if n, errno := f.Read(buf); n != 0 || errno != 0 {
		t.Fatalf("read at the end: %d %v", n, errno)
	}
	if off, errno := f.Seek(-2, io.SeekEnd); off != 3 || errno != 0 {
		t.Fatalf("seek %d %v", off, errno)
	}
	if _, errno := f.Write([]byte("p!")); errno != 0 {
		t.Fatal(errno)
	}
	if _, errno := f.Pwrite([]byte("J"), 0); errno != 0 {
		t.Fatal(errno)
	}
	if n, _ := f.Pread(buf, 0); string(buf[:n]) != "Jelp!" {
		t.Fatalf("after writes %q", buf[:n])
	}
	if _, errno := f.Pwrite([]byte("z"), 8); errno != 0 {
		t.Fatal(errno)
	}
	if n, _ := f.Pread(buf, 0); string(buf[:n]) != "Jelp!\x00\x00\x00z" {
		t.Fatalf("after a write past the end %q", buf[:n])
	}
	if errno := f.Truncate(2); errno != 0 {
		t.Fatal(errno)
	}
	if st, _ := f.Stat(); st.Size != 2 {
		t.Fatalf("size %d after truncate", st.Size)
	}
	if _, errno := f.Seek(-1, io.SeekStart); errno != experimentalsys.EINVAL {
		t.Fatalf("seek before the start: %v", errno)
	}
	a, errno := m.OpenFile("d/f", oWrite|experimentalsys.O_APPEND, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	if _, errno := a.Write([]byte("++")); errno != 0 {
		t.Fatal(errno)
	}
	a.Close()
	if n, _ := f.Pread(buf, 0); string(buf[:n]) != "Je++" {
		t.Fatalf("after append %q", buf[:n])
	}
	r, _ := m.OpenFile("d/f", oRead, 0)
	defer r.Close()
	if _, errno := r.Write([]byte("x")); errno != experimentalsys.EBADF {
		t.Fatalf("write to a read-only handle: %v", errno)
	}
	if errno := r.Truncate(0); errno != experimentalsys.EBADF {
		t.Fatalf("truncate through a read-only handle: %v", errno)
	}
	checkCharges(t, m)
}

func TestMemTmp_readdir(t *testing.T) {
	m := memWithFiles(t, 1<<20)
	for _, name := range []string{"d/b", "d/a"} {
		if errno := m.Mkdir(name, 0o755); errno != 0 {
			t.Fatal(errno)
		}
	}
	d, errno := m.OpenFile("d", oRead|experimentalsys.O_DIRECTORY, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	defer d.Close()
	list := func(n int) string {
		entries, errno := d.Readdir(n)
		if errno != 0 {
			t.Fatal(errno)
		}
		var out []string
		for _, e := range entries {
			name := e.Name
			if e.Type == fs.ModeDir {
				name += "/"
			}
			out = append(out, name)
		}
		return strings.Join(out, " ")
	}
	if got := list(2); got != "a/ b/" {
		t.Fatalf("first two %q", got)
	}
	if got := list(2); got != "f" {
		t.Fatalf("the rest %q", got)
	}
	if got := list(2); got != "" {
		t.Fatalf("after the end %q", got)
	}
	if _, errno := d.Seek(0, io.SeekStart); errno != 0 {
		t.Fatal(errno)
	}
	if got := list(0); got != "a/ b/ f" {
		t.Fatalf("after a rewind %q", got)
	}
	if _, errno := d.Seek(1, io.SeekStart); errno != experimentalsys.EISDIR {
		t.Fatalf("seek in a folder: %v", errno)
	}
}

func TestMemTmp_limit(t *testing.T) {
	var full int
	m := newMemTmp(2*nodeCost+100, func() { full++ })
	f, errno := m.OpenFile("f", oCreate, 0o644)
	if errno != 0 {
		t.Fatal(errno)
	}
	// The mount holds its top and f: 100 bytes of room remain.
	if n, errno := f.Write(make([]byte, 60)); n != 60 || errno != 0 {
		t.Fatal(n, errno)
	}
	if n, errno := f.Write(make([]byte, 60)); n != 40 || errno != 0 {
		t.Fatalf("a write past the limit wrote %d (%v), want the 40 bytes that fit", n, errno)
	}
	if n, errno := f.Write([]byte("x")); n != 0 || errno != errFull {
		t.Fatalf("a write when full: %d %v", n, errno)
	}
	if _, errno := f.Pwrite([]byte("x"), 1<<40); errno != errFull {
		t.Fatalf("a write far past the end: %v", errno)
	}
	if errno := f.Truncate(1 << 40); errno != errFull {
		t.Fatalf("a truncate far past the end: %v", errno)
	}
	if _, errno := m.OpenFile("g", oCreate, 0o644); errno != errFull {
		t.Fatalf("a new entry when full: %v", errno)
	}
	if errno := m.Mkdir("e", 0o755); errno != errFull {
		t.Fatalf("a new folder when full: %v", errno)
	}
	if full != 1 {
		t.Fatalf("reported full %d times, want once", full)
	}
	// Removed while open, f still holds its bytes.
	if errno := m.Unlink("f"); errno != 0 {
		t.Fatal(errno)
	}
	if _, errno := m.OpenFile("g", oCreate, 0o644); errno != errFull {
		t.Fatalf("room freed by unlinking a file still open: %v", errno)
	}
	f.Close()
	g, errno := m.OpenFile("g", oCreate, 0o644)
	if errno != 0 {
		t.Fatalf("no room after the removed file was closed: %v", errno)
	}
	if n, errno := g.Write(make([]byte, 100)); n != 100 || errno != 0 {
		t.Fatal(n, errno)
	}
	g.Close()
	checkCharges(t, m)
}

// checkCharges checks that what m holds is what its reachable nodes are
// charged, and within its limit.
func checkCharges(t *testing.T, m *memTmp) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.root == nil {
		return
	}
	var sum func(n *memNode) int64
	sum = func(n *memNode) int64 {
		if n.charged != int64(len(n.data))+nodeCost {
			t.Errorf("node %d charged %d for %d bytes", n.ino, n.charged, len(n.data))
		}
		s := n.charged
		for _, k := range n.kids {
			s += sum(k)
		}
		return s
	}
	if got := sum(m.root); got != m.used || m.used > m.limit {
		t.Fatalf("used %d, nodes hold %d, limit %d", m.used, got, m.limit)
	}
}

// FuzzMemTmp runs a sequence of operations, each from 4 bytes (what,
// which path, a size), and checks after each that the charges add up and
// stay within the limit, and that nothing panics.
func FuzzMemTmp(f *testing.F) {
	f.Add([]byte{0, 1, 8, 0, 3, 1, 200, 0, 5, 1, 0, 0, 1, 2, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 0, 3, 255, 255, 4, 3, 0, 0, 6, 0, 3, 0, 7, 3, 0, 0})
	paths := []string{"a", "a/b", "b", "a/b/c", "../a", "c"}
	f.Fuzz(func(t *testing.T, ops []byte) {
		m := newMemTmp(4*nodeCost+4096, nil)
		var open []experimentalsys.File
		defer func() {
			for _, h := range open {
				h.Close()
			}
		}()
		for len(ops) >= 4 {
			op, p, size := ops[0]%9, paths[int(ops[1])%len(paths)], int64(binary.LittleEndian.Uint16(ops[2:4]))
			ops = ops[4:]
			switch op {
			case 0:
				_ = m.Mkdir(p, 0o755)
			case 1:
				if h, errno := m.OpenFile(p, oCreate, 0o644); errno == 0 {
					open = append(open, h)
				}
			case 2:
				_ = m.Unlink(p)
			case 3:
				if len(open) > 0 {
					_, _ = open[len(open)-1].Write(make([]byte, size))
				}
			case 4:
				if len(open) > 0 {
					_, _ = open[0].Pwrite([]byte("x"), size*64)
				}
			case 5:
				if len(open) > 0 {
					_ = open[len(open)-1].Truncate(size)
				}
			case 6:
				if len(open) > 0 {
					open[0].Close()
					open = open[1:]
				}
			case 7:
				_ = m.Rename(p, paths[int(size)%len(paths)])
			case 8:
				_ = m.Rmdir(p)
			}
			checkLive(t, m, open)
		}
	})
}

// checkLive checks the charges of m's reachable nodes and of the nodes
// still open but removed.
func checkLive(t *testing.T, m *memTmp, open []experimentalsys.File) {
	t.Helper()
	seen := map[*memNode]bool{}
	var sum func(n *memNode) int64
	sum = func(n *memNode) int64 {
		seen[n] = true
		s := n.charged
		for _, k := range n.kids {
			s += sum(k)
		}
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	total := sum(m.root)
	for _, h := range open {
		n := h.(*memFile).n
		if !seen[n] {
			seen[n] = true
			total += n.charged
		}
	}
	if total != m.used || m.used > m.limit {
		t.Fatalf("used %d, live nodes hold %d, limit %d", m.used, total, m.limit)
	}
}
