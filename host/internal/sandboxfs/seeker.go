package sandboxfs

import (
	"errors"
	"io"
	"io/fs"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// The wazero File interface has Seek(int64, int) (int64, Errno), which
// go vet's stdmethods check rejects in any package that declares it (it
// wants io.Seeker's error result). So file declares no Seek: it embeds a
// wazero adapter file (sysfs.AdaptFS over a one-entry fs.FS) whose Seek
// forwards to a standard io.Seeker, seekFunc, that calls file.seekTo.
// Every other method of the adapter is shadowed by file's own.

// NewSeeker returns a wazero File whose Seek calls seek (an Errno
// returned as the error reaches the guest as it is). A type that embeds it
// and shadows every other method implements the wazero File without
// declaring a Seek of its own.
func NewSeeker(seek func(offset int64, whence int) (int64, error)) (experimentalsys.File, experimentalsys.Errno) {
	return (&sysfs.AdaptFS{FS: seekFS{seek: seek}}).OpenFile(".", experimentalsys.O_RDONLY, 0)
}

// seekFS is an fs.FS whose only file is a seekFunc.
type seekFS struct {
	seek func(offset int64, whence int) (int64, error)
}

// Open implements fs.FS.
func (s seekFS) Open(string) (fs.File, error) { return seekFunc(s), nil }

// seekFunc is an fs.File and io.Seeker forwarding Seek. It stats as a
// regular file so the adapter always forwards seeks (it would swallow a
// directory rewind itself).
type seekFunc seekFS

// Seek implements io.Seeker.
func (s seekFunc) Seek(offset int64, whence int) (int64, error) { return s.seek(offset, whence) }

// Stat implements fs.File.
func (seekFunc) Stat() (fs.FileInfo, error) { return seekInfo{}, nil }

// Read implements fs.File; never used, file shadows Read.
func (seekFunc) Read([]byte) (int, error) { return 0, io.EOF }

// Close implements fs.File; never used, file shadows Close.
func (seekFunc) Close() error { return nil }

// seekInfo is the FileInfo of a seekFunc.
type seekInfo struct{}

func (seekInfo) Name() string       { return "." }
func (seekInfo) Size() int64        { return 0 }
func (seekInfo) Mode() fs.FileMode  { return 0o400 }
func (seekInfo) ModTime() time.Time { return time.Time{} }
func (seekInfo) IsDir() bool        { return false }
func (seekInfo) Sys() any           { return nil }

var errNoSeek = errors.New("seek not supported")

var _ = errNoSeek
