package script

import "errors"

// SimulateNoLandlock makes r behave as on a kernel without Landlock, for
// the degraded-isolation tests. It returns a function that undoes it.
func SimulateNoLandlock(r *Runner) (reset func()) {
	saved := r.features
	r.features.LandlockABI = 0
	r.features.LandlockErr = errors.New("Landlock disabled by test")
	return func() { r.features = saved }
}

// CacheDir exposes the runner's dependency cache folder.
func CacheDir(r *Runner) string { return r.cacheDir }
