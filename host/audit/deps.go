package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/agenthost/agenthost/host/manifest"
)

// depFiles are the dependency files of a script tool, beside its manifest.
var depFiles = []string{"requirements.txt", "package.json", "package-lock.json", "npm-shrinkwrap.json"}

// depsDigest hashes a script tool's dependency files and its wheels/
// folder, each entry as its path, a NUL, its length and its bytes, in path
// order: a reviewer sees when a tool's dependencies change even if the
// script does not. "" when the tool has none.
func depsDigest(t *manifest.Tool) string {
	dir := filepath.Dir(t.Path)
	var files []string
	for _, f := range depFiles {
		if fi, err := os.Lstat(filepath.Join(dir, f)); err == nil && fi.Mode().IsRegular() {
			files = append(files, f)
		}
	}
	_ = filepath.WalkDir(filepath.Join(dir, "wheels"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if len(files) == 0 {
		return ""
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		fh, err := os.Open(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			continue
		}
		fi, _ := fh.Stat()
		io.WriteString(h, f)
		h.Write([]byte{0})
		io.WriteString(h, strconv.FormatInt(fi.Size(), 10))
		h.Write([]byte{0})
		_, _ = io.Copy(h, fh)
		fh.Close()
	}
	return digestPrefix + hex.EncodeToString(h.Sum(nil))
}
