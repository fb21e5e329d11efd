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
