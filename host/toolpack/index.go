package toolpack

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// File names inside a toolpack folder.
const (
	IndexFile     = "toolpack.json"
	SignatureFile = "toolpack.json.sig"
	// Namespace is the SSH signature namespace of toolpack signatures.
	Namespace = "agenthost-toolpack"
)

// Limits on what a toolpack may hold.
const (
	MaxFiles     = 10000
	MaxFileBytes = 256 << 20
	MaxIndex     = 4 << 20
)

// Index is toolpack.json: every file of the folder (but the index and its
// signature) with its SHA-256, sorted by path.
type Index struct {
	Version int     `json:"version"`
	Files   []Entry `json:"files"`
}

// Entry is one file of an Index.
type Entry struct {
	Path   string `json:"path"` // slash-separated, relative to the folder
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Exec   bool   `json:"executable,omitempty"`
}

// skipped reports whether the walk leaves a name out: the index, its
// signature, and names starting with '.' (editor and VCS files).
func skipped(rel string, d fs.DirEntry) bool {
	name := d.Name()
	if strings.HasPrefix(name, ".") {
		return true
	}
	return !d.IsDir() && (rel == IndexFile || rel == SignatureFile)
}

// Build hashes every regular file under dir. Symbolic links and other
// special files are errors (a signed folder holds plain files only).
func Build(dir string) (*Index, error) {
	idx := &Index{Version: 1, Files: []Entry{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if skipped(rel, d) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file (a toolpack holds plain files only)", rel)
		}
		if len(idx.Files) >= MaxFiles {
			return fmt.Errorf("more than %d files", MaxFiles)
		}
		f, err := hashFile(p)
		if err != nil {
			return err
		}
		f.Path = rel
		idx.Files = append(idx.Files, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("toolpack %s: %w", dir, err)
	}
	sort.Slice(idx.Files, func(i, j int) bool { return idx.Files[i].Path < idx.Files[j].Path })
	return idx, nil
}

func hashFile(p string) (Entry, error) {
	f, err := os.Open(p)
	if err != nil {
		return Entry{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Entry{}, err
	}
	if fi.Size() > MaxFileBytes {
		return Entry{}, fmt.Errorf("%s: %d bytes; the limit is %d", p, fi.Size(), MaxFileBytes)
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return Entry{}, err
	}
	return Entry{SHA256: hex.EncodeToString(h.Sum(nil)), Size: n, Exec: fi.Mode()&0o111 != 0}, nil
}

// Marshal is the index's canonical bytes (what is signed).
func (x *Index) Marshal() []byte {
	b, _ := json.MarshalIndent(x, "", "  ")
	return append(b, '\n')
}

// ParseIndex parses toolpack.json.
func ParseIndex(data []byte) (*Index, error) {
	if len(data) > MaxIndex {
		return nil, fmt.Errorf("%s: %d bytes; the limit is %d", IndexFile, len(data), MaxIndex)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	x := &Index{}
	if err := dec.Decode(x); err != nil {
		return nil, fmt.Errorf("%s: %w", IndexFile, err)
	}
	if x.Version != 1 {
		return nil, fmt.Errorf("%s: version %d; this host reads version 1", IndexFile, x.Version)
	}
	if len(x.Files) > MaxFiles {
		return nil, fmt.Errorf("%s: %d files; the limit is %d", IndexFile, len(x.Files), MaxFiles)
	}
	seen := map[string]bool{}
	for _, f := range x.Files {
		if f.Path == "" || strings.HasPrefix(f.Path, "/") || strings.Contains(f.Path, "\\") || hasDotDot(f.Path) || f.Path == IndexFile || f.Path == SignatureFile {
			return nil, fmt.Errorf("%s: bad path %q", IndexFile, f.Path)
		}
		if f.Size < 0 || f.Size > MaxFileBytes {
			return nil, fmt.Errorf("%s: %s: size %d; the limit is %d", IndexFile, f.Path, f.Size, MaxFileBytes)
		}
		if b, err := hex.DecodeString(f.SHA256); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("%s: %s: %q is not a SHA-256 in hex", IndexFile, f.Path, f.SHA256)
		}
		if seen[f.Path] {
			return nil, fmt.Errorf("%s: %q is listed twice", IndexFile, f.Path)
		}
		seen[f.Path] = true
	}
	return x, nil
}

func hasDotDot(p string) bool {
	for _, s := range strings.Split(p, "/") {
		if s == ".." || s == "." || s == "" {
			return true
		}
	}
	return false
}

// WriteIndex builds the index of dir and writes it to dir/toolpack.json.
func WriteIndex(dir string) (*Index, error) {
	idx, err := Build(dir)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, IndexFile), idx.Marshal(), 0o644); err != nil {
		return nil, fmt.Errorf("toolpack %s: %w", dir, err)
	}
	return idx, nil
}

// Diff compares an index with a folder's files as they are now: the
// files added, changed and removed since the index was written.
func (x *Index) Diff(dir string) (added, changed, removed []string, err error) {
	now, err := Build(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	want := map[string]Entry{}
	for _, f := range x.Files {
		want[f.Path] = f
	}
	for _, f := range now.Files {
		w, ok := want[f.Path]
		switch {
		case !ok:
			added = append(added, f.Path)
		case w.SHA256 != f.SHA256 || w.Size != f.Size:
			changed = append(changed, f.Path)
		}
		delete(want, f.Path)
	}
	for p := range want {
		removed = append(removed, p)
	}
	sort.Strings(removed)
	return added, changed, removed, nil
}

// SHA256Of returns the indexed digest of path (slash-separated, relative).
func (x *Index) SHA256Of(path string) (string, bool) {
	for _, f := range x.Files {
		if f.Path == path {
			return f.SHA256, true
		}
	}
	return "", false
}
