package toolpack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// MaxPackBytes caps the sum of the indexed file sizes of an archive: what
// reading one may write or hash, whatever its compressed size.
const MaxPackBytes = 512 << 20

// maxSignature caps toolpack.json.sig (an armored SSH signature is under
// 2 KiB).
const maxSignature = 64 << 10

// ArchiveOptions say how an archive is read.
type ArchiveOptions struct {
	// Trusted, when not nil, are the keys the index must be signed by:
	// the signature is checked before any other file is read.
	Trusted []Signer
	// Now is the time the keys are checked at (zero: now).
	Now time.Time
	// Signature stands for toolpack.json.sig when the archive holds none
	// (a signature attached to the pack in a registry); it is written
	// into the folder with the files.
	Signature []byte
}

// Unpack extracts a toolpack archive into dest (which must not exist),
// as UnpackWith without trusted keys: only the indexed files, each with
// its indexed size and digest.
func Unpack(r io.Reader, dest string) error {
	_, err := UnpackWith(r, dest, ArchiveOptions{})
	return err
}

// UnpackWith extracts a toolpack archive into dest (which must not
// exist). The archive is read in the order Pack writes it: toolpack.json
// first (its files' sizes must sum to at most MaxPackBytes), then its
// signature, which is verified against o.Trusted when given, before any
// other byte is read; then only files the index lists, each a regular
// file of exactly its indexed size and digest, each once; all of them.
// Anything else is an error, and dest is removed: a hostile archive
// costs at most what its index declares, and leaves nothing behind.
func UnpackWith(r io.Reader, dest string, o ArchiveOptions) (*Verified, error) {
	if err := os.Mkdir(dest, 0o755); err != nil {
		return nil, fmt.Errorf("unpack: %w", err)
	}
	v, err := readArchive(r, dest, o)
	if err != nil {
		os.RemoveAll(dest)
		return nil, err
	}
	return v, nil
}

// VerifyArchive checks an archive as UnpackWith does, against trusted,
// without writing anything: the signature first, then every file's size
// and digest as it streams by.
func VerifyArchive(r io.Reader, trusted []Signer, now time.Time) (*Verified, error) {
	if trusted == nil {
		trusted = []Signer{}
	}
	return readArchive(r, "", ArchiveOptions{Trusted: trusted, Now: now})
}

// readArchive reads an archive; with dest "" it only checks it.
func readArchive(r io.Reader, dest string, o ArchiveOptions) (*Verified, error) {
	bad := func(format string, args ...any) error {
		return &VerifyError{Dir: "archive", Reason: "bad archive", Detail: fmt.Sprintf(format, args...)}
	}
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, bad("not a gzip stream: %v", err)
	}
	gz.Multistream(false)
	tr := tar.NewReader(gz)
	next := func(what string) (*tar.Header, error) {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if err != nil {
			return nil, bad("%s: %v", what, err)
		}
		if h.Typeflag != tar.TypeReg {
			return nil, bad("%s: only regular files may be in a toolpack", h.Name)
		}
		return h, nil
	}
	h, err := next("the first entry")
	if errors.Is(err, io.EOF) {
		return nil, &VerifyError{Dir: "archive", Reason: "unsigned", Detail: "an empty archive, with no " + IndexFile}
	}
	if err != nil {
		return nil, err
	}
	if h.Name != IndexFile {
		return nil, bad("the first entry is %q; a toolpack archive starts with %s (pack it with agenthost pack)", h.Name, IndexFile)
	}
	raw, err := readEntry(tr, h, MaxIndex)
	if err != nil {
		return nil, bad("%s: %v", IndexFile, err)
	}
	idx, err := ParseIndex(raw)
	if err != nil {
		return nil, &VerifyError{Dir: "archive", Reason: "bad index", Detail: err.Error()}
	}
	var total int64
	for _, f := range idx.Files {
		total += f.Size
	}
	if total > MaxPackBytes {
		return nil, bad("the index lists %d bytes of files; the limit is %d", total, MaxPackBytes)
	}
	h, err = next("the entry after the index")
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	sig := o.Signature
	if h != nil && h.Name == SignatureFile {
		if sig, err = readEntry(tr, h, maxSignature); err != nil {
			return nil, bad("%s: %v", SignatureFile, err)
		}
		if h, err = next("the entry after the signature"); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
	v := &Verified{Index: idx}
	if o.Trusted != nil {
		if v, err = checkSignature("archive", raw, idx, sig, o.Trusted, o.Now); err != nil {
			return nil, err
		}
	}
	if dest != "" {
		if err := os.WriteFile(filepath.Join(dest, IndexFile), raw, 0o644); err != nil {
			return nil, fmt.Errorf("unpack: %w", err)
		}
		if sig != nil {
			if err := os.WriteFile(filepath.Join(dest, SignatureFile), sig, 0o644); err != nil {
				return nil, fmt.Errorf("unpack: %w", err)
			}
		}
	}
	want := make(map[string]Entry, len(idx.Files))
	for _, f := range idx.Files {
		want[f.Path] = f
	}
	changed := func(format string, args ...any) error {
		return &VerifyError{Dir: "archive", Reason: "files changed", Detail: fmt.Sprintf(format, args...)}
	}
	for ; h != nil; h, err = next("an entry") {
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		f, ok := want[h.Name]
		if !ok {
			if h.Name == IndexFile || h.Name == SignatureFile {
				return nil, bad("%s appears twice, or after the files", h.Name)
			}
			return nil, changed("added %s (not in the signed index, or listed twice)", h.Name)
		}
		delete(want, h.Name)
		if h.Size != f.Size {
			return nil, changed("changed %s: %d bytes in the archive, %d in the index", h.Name, h.Size, f.Size)
		}
		if err := extract(tr, dest, f); err != nil {
			return nil, err
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(want) > 0 {
		missing := make([]string, 0, len(want))
		for _, f := range idx.Files {
			if _, ok := want[f.Path]; ok {
				missing = append(missing, f.Path)
			}
		}
		return nil, changed("removed %s", joinPaths(missing))
	}
	return v, nil
}

// readEntry reads an entry of at most max bytes.
func readEntry(tr *tar.Reader, h *tar.Header, max int64) ([]byte, error) {
	if h.Size > max {
		return nil, fmt.Errorf("%d bytes; the limit is %d", h.Size, max)
	}
	b, err := io.ReadAll(io.LimitReader(tr, max))
	if err == nil && int64(len(b)) != h.Size {
		err = io.ErrUnexpectedEOF
	}
	return b, err
}

// extract copies the current entry, an indexed file f, into dest (or
// nowhere when dest is ""), checking its digest; a file whose digest
// differs is removed.
func extract(tr *tar.Reader, dest string, f Entry) error {
	var w io.Writer = io.Discard
	var out *os.File
	if dest != "" {
		p := filepath.Join(dest, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
		mode := os.FileMode(0o644)
		if f.Exec {
			mode = 0o755
		}
		var err error
		if out, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode); err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
		w = out
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(tr, f.Size))
	if err == nil && n != f.Size {
		err = io.ErrUnexpectedEOF
	}
	if out != nil {
		if cerr := out.Close(); err == nil && cerr != nil {
			return fmt.Errorf("unpack: %w", cerr)
		}
	}
	if err != nil {
		return &VerifyError{Dir: "archive", Reason: "bad archive", Detail: fmt.Sprintf("%s: %v", f.Path, err)}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return &VerifyError{Dir: "archive", Reason: "files changed", Detail: "changed " + f.Path}
	}
	return nil
}

func joinPaths(p []string) string {
	var b bytes.Buffer
	for i, s := range p {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s)
	}
	return b.String()
}
