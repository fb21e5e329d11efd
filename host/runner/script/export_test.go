package script

import (
	"context"
	"errors"
)

// SimulateNoLandlock makes r behave as on a kernel without Landlock, for
// the degraded-isolation tests. It returns a function that undoes it.
func SimulateNoLandlock(r *Runner) (reset func()) {
	f := r.feat()
	saved := *f
	f.LandlockABI = 0
	f.LandlockErr = errors.New("landlock disabled by test")
	return func() { *f = saved }
}

// CacheDir exposes the runner's dependency cache folder.
func CacheDir(r *Runner) string { return r.cacheDir }

// InterpreterExe resolves lang's real interpreter, for the bare-spawn
// benchmark baseline.
func InterpreterExe(r *Runner, lang string) (string, error) {
	in, err := r.interps.get(context.Background(), lang)
	if err != nil {
		return "", err
	}
	return in.exe, nil
}

// SimulateNoEgress makes r behave as on a host that cannot run the
// egress proxy (not root).
func SimulateNoEgress(r *Runner) (reset func()) {
	f := r.feat()
	saved := *f
	f.Egress = false
	return func() { *f = saved }
}
