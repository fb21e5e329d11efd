package script

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// scratch is where a root host makes each call's $TMP. A call runs as its
// own uid, which changes into its $TMP before it gets any capability back,
// so every folder above $TMP must be traversable by others. The operator's
// TMPDIR often is not (mktemp -d and CI runners give 0700 folders), so the
// base is the first of TMPDIR, /tmp, /var/tmp and /dev/shm whose whole path
// is traversable, and the host makes a private folder there (0711: others
// may pass through it to a $TMP whose random name they know, not list it).
type scratch struct {
	once sync.Once
	dir  string
	err  error
}

// dirFor returns the folder in which per-call $TMP folders are made: for a
// non-root host (no per-call uid) simply TMPDIR.
func (s *scratch) dirFor(perCallUID bool) (string, error) {
	if !perCallUID {
		return os.TempDir(), nil
	}
	s.once.Do(func() { s.dir, s.err = makeScratch() })
	return s.dir, s.err
}

func makeScratch() (string, error) {
	var tried []string
	for _, base := range []string{os.TempDir(), "/tmp", "/var/tmp", "/dev/shm"} {
		if !traversable(base) {
			tried = append(tried, base)
			continue
		}
		dir, err := os.MkdirTemp(base, "agenthost-calls-")
		if err != nil {
			tried = append(tried, base)
			continue
		}
		if err := os.Chmod(dir, 0o711); err != nil {
			_ = os.Remove(dir)
			return "", fmt.Errorf("script scratch folder: %w", err)
		}
		return dir, nil
	}
	return "", fmt.Errorf("script scratch folder: none of %v can be passed through by a per-call user; make one of them world-traversable (o+x)", tried)
}

// traversable reports whether every folder on the path to dir (dir
// included) can be passed through by any user.
func traversable(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}

// remove deletes the scratch folder (at Close).
func (s *scratch) remove() error {
	if s.dir == "" {
		return nil
	}
	if err := os.RemoveAll(s.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("script scratch folder: %w", err)
	}
	return nil
}

// Close releases what the runner made: the user namespaces of its uids
// and its scratch folder. Calls must have returned.
func (r *Runner) Close(context.Context) error {
	_ = r.userns.Close()
	return r.scratch.remove()
}
