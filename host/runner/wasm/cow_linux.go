//go:build linux

package wasm

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// cowImage is a tool's snapshot memory in an anonymous in-memory file
// (memfd). Each pooled instance maps it privately: the instance reads the
// snapshot's pages, a write copies the page for that instance only, and
// reset drops the copied pages so the mapping reads the snapshot again.
// A reset costs in proportion to the pages the call wrote, not to the
// memory's size, and instances share the pages they never write.
type cowImage struct {
	fd   int
	size int
}

// newCOWImage writes snap to a new memfd.
func newCOWImage(snap []byte) (*cowImage, error) {
	if len(snap) == 0 || len(snap)%unix.Getpagesize() != 0 {
		return nil, fmt.Errorf("snapshot size %d is not a multiple of the page size", len(snap))
	}
	fd, err := unix.MemfdCreate("agenthost-snapshot", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	for off := 0; off < len(snap); {
		n, err := unix.Pwrite(fd, snap[off:], int64(off))
		if err != nil {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("write snapshot: %w", err)
		}
		off += n
	}
	return &cowImage{fd: fd, size: len(snap)}, nil
}

// mapping returns a new private mapping of the image.
func (im *cowImage) mapping() ([]byte, error) {
	b, err := unix.Mmap(im.fd, 0, im.size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mmap snapshot: %w", err)
	}
	return b, nil
}

// reset makes a mapping read the snapshot again.
func (im *cowImage) reset(b []byte) error {
	if err := unix.Madvise(b, unix.MADV_DONTNEED); err != nil {
		return fmt.Errorf("madvise: %w", err)
	}
	return nil
}

// unmap releases a mapping.
func (im *cowImage) unmap(b []byte) error { return unix.Munmap(b) }

// close releases the image; mappings stay valid until unmapped.
func (im *cowImage) close() error { return unix.Close(im.fd) }
