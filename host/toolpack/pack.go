package toolpack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// epoch is the modification time of every archive entry, so that two
// packs of the same folder are byte-identical.
var epoch = time.Unix(0, 0).UTC()

// Pack writes dir as a reproducible .tar.gz to w: toolpack.json first,
// then toolpack.json.sig when the folder is signed, then every indexed
// file in path order, each with a fixed time, owner and mode (0644, or
// 0755 when executable). A folder with an index that no longer matches
// its files is an error (sign it again); an unsigned folder gets a fresh
// index, written into the folder too.
func Pack(dir string, w io.Writer) (*Index, error) {
	idx, err := packIndex(dir)
	if err != nil {
		return nil, err
	}
	gz, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	add := func(name string, data []byte, exec bool) error {
		mode := int64(0o644)
		if exec {
			mode = 0o755
		}
		h := &tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add(IndexFile, idx.Marshal(), false); err != nil {
		return nil, err
	}
	if sig, err := os.ReadFile(filepath.Join(dir, SignatureFile)); err == nil {
		if err := add(SignatureFile, sig, false); err != nil {
			return nil, err
		}
	}
	for _, f := range idx.Files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, fmt.Errorf("pack %s: %w", dir, err)
		}
		if err := add(f.Path, data, f.Exec); err != nil {
			return nil, fmt.Errorf("pack %s: %w", dir, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return idx, gz.Close()
}

// packIndex returns the folder's index: the signed one when it still
// matches, else a fresh one (an unsigned folder).
func packIndex(dir string) (*Index, error) {
	raw, err := os.ReadFile(filepath.Join(dir, IndexFile))
	_, sigErr := os.Stat(filepath.Join(dir, SignatureFile))
	if err != nil || sigErr != nil {
		return WriteIndex(dir)
	}
	idx, err := ParseIndex(raw)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	added, changed, removed, err := idx.Diff(dir)
	if err != nil {
		return nil, err
	}
	if len(added)+len(changed)+len(removed) > 0 {
		return nil, fmt.Errorf("pack %s: the folder changed since it was signed (added %v, changed %v, removed %v): sign it again", dir, added, changed, removed)
	}
	if !bytes.Equal(raw, idx.Marshal()) {
		// A signed index is packed as signed, byte for byte.
		return idx, errors.New("pack: " + IndexFile + " is not in canonical form; sign the folder again")
	}
	return idx, nil
}

// Unpack extracts a toolpack archive into dest (which must not exist):
// regular files only, no absolute paths or "..", at most MaxFiles files
// of MaxFileBytes each.
func Unpack(r io.Reader, dest string) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("unpack: not a gzip archive: %w", err)
	}
	tr := tar.NewReader(gz)
	if err := os.Mkdir(dest, 0o755); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
		if n++; n > MaxFiles+2 {
			return fmt.Errorf("unpack: more than %d files", MaxFiles)
		}
		if h.Typeflag != tar.TypeReg {
			return fmt.Errorf("unpack: %s: only regular files may be in a toolpack", h.Name)
		}
		if h.Name == "" || strings.HasPrefix(h.Name, "/") || strings.Contains(h.Name, "\\") || hasDotDot(h.Name) {
			return fmt.Errorf("unpack: %q: a bad path", h.Name)
		}
		if h.Size > MaxFileBytes {
			return fmt.Errorf("unpack: %s: %d bytes; the limit is %d", h.Name, h.Size, MaxFileBytes)
		}
		p := filepath.Join(dest, filepath.FromSlash(h.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
		mode := os.FileMode(0o644)
		if h.Mode&0o111 != 0 {
			mode = 0o755
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
		_, err = io.Copy(f, io.LimitReader(tr, MaxFileBytes))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
	}
}
