package main

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/abi/guest"
	"github.com/agenthost/agenthost/plugins/internal/guestpath"
)

// Limits of the arguments and of the walk.
const (
	defaultMaxEntries = 200
	maxMaxEntries     = 10000
	maxVisited        = 100000
)

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// Input is the arguments object of fs:list.
type Input struct {
	Path          string `json:"path,omitempty"`
	Glob          string `json:"glob,omitempty"`
	Recursive     bool   `json:"recursive,omitempty"`
	MaxEntries    *int   `json:"maxEntries,omitempty"`
	IncludeHidden bool   `json:"includeHidden,omitempty"`
}

// Output is the result of fs:list. Entries are sorted by path; Skipped
// counts entries that could not be read (refused by the sandbox or gone).
type Output struct {
	Path      string  `json:"path"`
	Entries   []Entry `json:"entries"`
	Count     int     `json:"count"`
	Truncated bool    `json:"truncated"`
	Skipped   int     `json:"skipped"`
}

// Entry is one listed file or folder. Path is relative to the listed
// directory, with "/" separators. Size is set for files.
type Entry struct {
	Path string `json:"path"`
	Type string `json:"type"`
	Size *int64 `json:"size,omitempty"`
}

// errStop ends a walk early.
var errStop = errors.New("stop walk")

// List lists in.Path (default: the workspace). root is prepended to guest
// paths to form the paths opened: "" in the guest, a test folder in unit
// tests.
//
// A glob without "/" is matched against entry names; one with "/" against
// the path relative to the listed directory. "*" and "?" stay within a
// path segment, "[...]" is a character class, and a "**" segment matches
// any number of segments; such a glob (with "/" or "**") implies
// Recursive. Hidden entries (".name") are skipped, and not
// descended into, unless IncludeHidden is set.
func List(root string, in Input) (Output, error) {
	dir := in.Path
	if dir == "" {
		dir = "."
	}
	p, err := guestpath.Resolve(dir)
	if err != nil {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "%s", err.Error())
	}
	limit := defaultMaxEntries
	if in.MaxEntries != nil {
		limit = *in.MaxEntries
	}
	if limit < 1 || limit > maxMaxEntries {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "maxEntries must be between 1 and %d, got %d", maxMaxEntries, limit)
	}
	if err := validGlob(in.Glob); err != nil {
		return Output{}, err
	}
	st, err := os.Stat(root + p)
	if err != nil {
		return Output{}, guestpath.FileError("stat", p, err)
	}
	if !st.IsDir() {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "%s is not a directory; use fs:read to read a file", p)
	}
	recursive := in.Recursive || strings.Contains(in.Glob, "/") || strings.Contains(in.Glob, "**")
	out := Output{Path: p, Entries: []Entry{}}
	visited := 0
	walkErr := fs.WalkDir(os.DirFS(root+p), ".", func(rel string, d fs.DirEntry, err error) error {
		if rel == "." {
			if err != nil {
				return err
			}
			return nil
		}
		if err != nil {
			out.Skipped++
			guest.Logf("skipped %s: %v", path.Join(p, rel), err)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		visited++
		if visited > maxVisited {
			out.Truncated = true
			return errStop
		}
		if !in.IncludeHidden && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if matchGlob(in.Glob, rel) {
			if len(out.Entries) == limit {
				out.Truncated = true
				return errStop
			}
			e, ok := entry(rel, d)
			if !ok {
				out.Skipped++
				return nil
			}
			out.Entries = append(out.Entries, e)
		}
		if d.IsDir() && !recursive {
			return fs.SkipDir
		}
		return nil
	})
	if walkErr != nil && !errors.Is(walkErr, errStop) {
		return Output{}, guestpath.FileError("list", p, walkErr)
	}
	out.Count = len(out.Entries)
	return out, nil
}

// entry describes d; ok is false when its metadata cannot be read.
func entry(rel string, d fs.DirEntry) (Entry, bool) {
	e := Entry{Path: rel}
	switch t := d.Type(); {
	case t.IsDir():
		e.Type = TypeDir
	case t&fs.ModeSymlink != 0:
		e.Type = TypeSymlink
	case t.IsRegular():
		e.Type = TypeFile
		info, err := d.Info()
		if err != nil {
			return Entry{}, false
		}
		size := info.Size()
		e.Size = &size
	default:
		e.Type = TypeOther
	}
	return e, true
}

// validGlob checks every segment of glob.
func validGlob(glob string) error {
	for _, seg := range strings.Split(glob, "/") {
		if _, err := path.Match(seg, ""); err != nil {
			return guest.Errorf(abi.CodeInvalidArguments, "invalid glob %q: bad segment %q", glob, seg)
		}
	}
	return nil
}

// matchGlob reports whether the slash-separated relative path rel matches
// glob (see List). An empty glob matches everything.
func matchGlob(glob, rel string) bool {
	if glob == "" {
		return true
	}
	if !strings.Contains(glob, "/") {
		if glob == "**" {
			return true
		}
		ok, _ := path.Match(glob, path.Base(rel))
		return ok
	}
	return matchSegments(strings.Split(glob, "/"), strings.Split(rel, "/"))
}

func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 1 {
				return true
			}
			for i := 0; i <= len(name); i++ {
				if matchSegments(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
