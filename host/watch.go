package host

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultWatchDebounce is how long Watch waits after the last file event
// before it reloads.
const DefaultWatchDebounce = 250 * time.Millisecond

// Watch reloads the catalogue when files under the loaded folders change
// (a manifest, module or script written, added, removed or renamed), once
// the events have been quiet for debounce (0 = DefaultWatchDebounce). It
// blocks until ctx is done. A reload error is logged and reported to
// onError (when not nil); the previous working versions stay.
func (h *Host) Watch(ctx context.Context, debounce time.Duration, onError func(error)) error {
	if debounce <= 0 {
		debounce = DefaultWatchDebounce
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer w.Close()
	h.cat.mu.Lock()
	dirs := append([]string(nil), h.cat.dirs...)
	h.cat.mu.Unlock()
	for _, d := range dirs {
		if err := watchTree(w, d); err != nil {
			return fmt.Errorf("watch %s: %w", d, err)
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op&fsnotify.Create != 0 {
				// A new folder: watch it too (fsnotify is not recursive).
				_ = watchTree(w, ev.Name)
			}
			timer.Reset(debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			h.log.Warn("watch", "error", err)
		case <-timer.C:
			if err := h.Reload(); err != nil {
				h.log.Warn("reload after a file change", "error", err)
				if onError != nil {
					onError(err)
				}
			}
		}
	}
}

// watchTree adds dir and every folder below it (skipping the ones the
// scan skips: names starting with "." and node_modules).
func watchTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		return w.Add(p)
	})
}
