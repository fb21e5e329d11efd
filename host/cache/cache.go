// Package cache lists and prunes the host's cache folder: compiled and
// instrumented modules, snapshots, script dependencies and the per-tool
// $CACHE folders. Everything in it can be rebuilt (a tool's $CACHE is, by
// contract, a cache), so pruning only costs time on the next call.
//
// An entry is the unit that is listed and removed: one file for compiled,
// instrumented or snapshot artefacts, one folder for a script's installed
// dependencies or a tool's $CACHE. Its "last used" time is the latest
// access or modification time of anything in it; on file systems mounted
// with relatime the access time moves at most once a day, which is fine
// for an eviction order measured in days.
package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Entry is one removable unit of the cache.
type Entry struct {
	// Path is relative to the cache root, slash-separated.
	Path string `json:"path"`
	// Kind is "compiled", "instrumented", "snapshot", "script-deps",
	// "tool-cache" or "other".
	Kind string `json:"kind"`
	// Size is the bytes of every file in the entry.
	Size int64 `json:"size"`
	// Used is when anything in the entry was last read or written.
	Used time.Time `json:"used"`
}

// folderUnits are the top-level folders whose children (at the given
// depth) are removed as one entry.
var folderUnits = map[string]struct {
	kind  string
	depth int
}{
	"scripts": {"script-deps", 1},
	"tools":   {"tool-cache", 3},
}

// stateFolders are top-level folders under the cache root that hold state,
// not derived files: serve's default data folder (the history database, the
// credential key, tenants' private workspaces). They are never listed, so
// never pruned.
var stateFolders = map[string]bool{"serve": true}

// List returns the entries of the cache rooted at dir, most recently used
// first. A missing dir is an empty cache; the state folders are left out.
func List(dir string) ([]Entry, error) {
	byPath := map[string]*Entry{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() && filepath.Dir(path) == filepath.Clean(dir) && stateFolders[d.Name()] {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		key, kind := unit(rel)
		fi, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		e := byPath[key]
		if e == nil {
			e = &Entry{Path: key, Kind: kind}
			byPath[key] = e
		}
		e.Size += fi.Size()
		if u := used(fi); u.After(e.Used) {
			e.Used = u
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cache list %s: %w", dir, err)
	}
	out := make([]Entry, 0, len(byPath))
	for _, e := range byPath {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Used.Equal(out[j].Used) {
			return out[i].Used.After(out[j].Used)
		}
		return out[i].Path < out[j].Path
	})
	return out, nil
}

// unit maps a file's path to its entry's path and kind.
func unit(rel string) (string, string) {
	parts := strings.Split(rel, "/")
	if u, ok := folderUnits[parts[0]]; ok && len(parts) > u.depth+1 {
		return strings.Join(parts[:u.depth+1], "/"), u.kind
	}
	switch {
	case strings.Contains(rel, "/meter/") || strings.HasPrefix(rel, "meter/"):
		return rel, "instrumented"
	case strings.Contains(rel, "snapshot"):
		return rel, "snapshot"
	case strings.HasPrefix(rel, "wazero/"):
		return rel, "compiled"
	}
	return rel, "other"
}

func used(fi fs.FileInfo) time.Time {
	t := fi.ModTime()
	if a, ok := accessTime(fi); ok && a.After(t) {
		t = a
	}
	return t
}

// PruneOptions say what Prune removes. The zero value removes nothing.
type PruneOptions struct {
	// OlderThan removes the entries not used for this long (0 = no age
	// rule).
	OlderThan time.Duration
	// MaxBytes then removes the least recently used entries until the
	// cache holds at most this many bytes (0 = no size rule).
	MaxBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Prune removes entries of the cache at dir by age, then by size (least
// recently used first), and returns what it removed.
func Prune(dir string, o PruneOptions) ([]Entry, error) {
	entries, err := List(dir)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	var total int64
	for _, e := range entries {
		total += e.Size
	}
	var removed []Entry
	var errs []error
	remove := func(e Entry) {
		if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(e.Path))); err != nil {
			errs = append(errs, err)
			return
		}
		total -= e.Size
		removed = append(removed, e)
	}
	keep := entries[:0:0]
	for _, e := range entries {
		if o.OlderThan > 0 && now().Sub(e.Used) > o.OlderThan {
			remove(e)
			continue
		}
		keep = append(keep, e)
	}
	for i := len(keep) - 1; i >= 0 && o.MaxBytes > 0 && total > o.MaxBytes; i-- { // oldest last
		remove(keep[i])
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("cache prune %s: %w", dir, errors.Join(errs...))
	}
	return removed, nil
}

// Resolve returns the host's cache folder: explicit when set (the
// --cache-dir flag, Options.CacheDir), else $XDG_CACHE_HOME/agenthost,
// else $HOME/.cache/agenthost. It never falls back to a shared temporary
// folder, where another user could plant artefacts: with none of them set
// it is an error.
func Resolve(explicit string) (string, error) {
	dir := explicit
	switch {
	case dir != "":
	case filepath.IsAbs(os.Getenv("XDG_CACHE_HOME")):
		dir = filepath.Join(os.Getenv("XDG_CACHE_HOME"), "agenthost")
	case filepath.IsAbs(os.Getenv("HOME")):
		dir = filepath.Join(os.Getenv("HOME"), ".cache", "agenthost")
	default:
		return "", errors.New("no cache folder: set --cache-dir (Options.CacheDir), XDG_CACHE_HOME or HOME; a shared temporary folder is never used")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("cache folder %s: %w", dir, err)
	}
	return abs, nil
}

// Secure creates dir 0700 if needed and checks that it is a folder the
// current user owns and that neither group nor others can write: anyone
// else who could write there could plant a compiled or instrumented module
// that the host would run. Where files have no Unix owner and mode
// (Windows) only the first check is made: the folder's access list is the
// operator's to set.
func Secure(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cache folder %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("cache folder %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("cache folder %s is not a folder (a symbolic link or a file); choose another with --cache-dir", dir)
	}
	return checkOwner(dir, fi)
}
