package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the master the test drives, the
// slave the command gets as its terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// screen collects what the command writes to its terminal.
type screen struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{}
}

func (s *screen) waitFor(t *testing.T, text string) {
	t.Helper()
	for {
		s.mu.Lock()
		got := s.buf.String()
		s.mu.Unlock()
		if strings.Contains(got, text) {
			return
		}
		if _, ok := <-s.more; !ok {
			t.Fatalf("the terminal closed before %q:\n%s", text, got)
		}
	}
}

func (s *screen) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.buf.String() }

// TestApproveTerminal runs `agenthost exec` on a real pseudo-terminal:
// the question shows the tool, arguments, grant and risks; y runs the
// call, n denies it, a allows it.
func TestApproveTerminal(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agenthost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	toolpacks, _ := filepath.Abs("../../toolpacks")
	action, _ := filepath.Abs("testdata/echo_action.txt")
	pol := writeApprovePolicy(t)
	cache := t.TempDir()
	for _, tc := range []struct {
		answer, want string
	}{
		{"y", `"status": "success"`},
		{"a", `"status": "success"`},
		{"n", `denied by terminal:`},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			master, slave := openPTY(t)
			cmd := exec.Command(bin, "exec", "--dir", toolpacks, "--policy", pol, "--log-level", "off", action)
			cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			slave.Close()
			sc := &screen{more: make(chan struct{}, 1)}
			go func() {
				b := make([]byte, 4096)
				for {
					n, err := master.Read(b)
					sc.mu.Lock()
					sc.buf.Write(b[:n])
					sc.mu.Unlock()
					select {
					case sc.more <- struct{}{}:
					default:
					}
					if err != nil {
						close(sc.more)
						return
					}
				}
			}()
			sc.waitFor(t, "[n] deny: ")
			out := sc.String()
			for _, w := range []string{"tool:      core:echo", `arguments: {"msg":"hi"}`, "grant:     read", "risks:     args:msg"} {
				if !strings.Contains(out, w) {
					t.Errorf("the question lacks %q:\n%s", w, out)
				}
			}
			if _, err := master.Write([]byte(tc.answer + "\n")); err != nil {
				t.Fatal(err)
			}
			sc.waitFor(t, tc.want)
			_ = cmd.Wait()
		})
	}
}
