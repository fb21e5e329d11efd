//go:build linux

package wasm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cowImage is a tool's snapshot memory in an anonymous in-memory file
// (memfd). Each pooled instance maps it privately: the instance reads the
// snapshot's pages, a write copies the page for that instance only, and
// instances share the pages they never write. The memfd is never written
// after newCOWImage, so a page of a mapping that is still the file's page
// holds the snapshot: only the pages an instance copied (written) can
// differ, and /proc/self/pagemap tells which those are (written).
type cowImage struct {
	// mu orders close with mapping: a descriptor number closed while a
	// mapping is made could be reused by another file and mapped instead.
	mu   sync.RWMutex
	fd   int // -1 once closed
	size int
	// stored is how many bytes the memfd holds: the snapshot's pages that
	// are not all zeros (the others are holes).
	stored int
	// pagemap is /proc/self/pagemap, -1 when it cannot be read (then
	// every page counts as written).
	pagemap int
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
	// Pages of zeros are left as holes, which read as zeros and take no
	// memory: a Go guest's memory is mostly untouched heap.
	if err := unix.Ftruncate(fd, int64(len(snap))); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("size snapshot: %w", err)
	}
	stored := 0
	for off := 0; off < len(snap); {
		if allZero(snap[off : off+pageSize]) {
			off += pageSize
			continue
		}
		end := off + pageSize
		for end < len(snap) && !allZero(snap[end:end+pageSize]) {
			end += pageSize
		}
		stored += end - off
		for off < end {
			n, err := unix.Pwrite(fd, snap[off:end], int64(off))
			if err != nil {
				_ = unix.Close(fd)
				return nil, fmt.Errorf("write snapshot: %w", err)
			}
			off += n
		}
	}
	pm, err := unix.Open("/proc/self/pagemap", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		pm = -1
	}
	return &cowImage{fd: fd, size: len(snap), stored: stored, pagemap: pm}, nil
}

// zeroPage is a page of zeros, for allZero.
var zeroPage [pageSize]byte

// allZero reports whether the page p holds only zeros.
func allZero(p []byte) bool { return bytes.Equal(p, zeroPage[:len(p)]) }

// Bits of a /proc/self/pagemap entry (Documentation/admin-guide/mm/pagemap.rst).
const (
	pagemapPresent = 1 << 63
	pagemapSwapped = 1 << 62
	pagemapFile    = 1 << 61 // file page or shared anonymous: not copied
)

// written reports, for each 4 KiB page of the mapping b, whether it may
// differ from the image: the page was copied on a write (present and not
// the file's page) or swapped out (only copied pages can be). Pages never
// touched or only read are the memfd's own. scratch is reused between
// calls (8 bytes per page). Without pagemap every page is reported.
func (im *cowImage) written(b []byte, scratch []byte) ([]byte, func(page int) bool) {
	pages := len(b) / pageSize
	im.mu.RLock()
	defer im.mu.RUnlock()
	if im.pagemap < 0 || pageSize != unix.Getpagesize() {
		return scratch, func(int) bool { return true }
	}
	if cap(scratch) < pages*8 {
		scratch = make([]byte, pages*8)
	}
	scratch = scratch[:pages*8]
	off := int64(uintptr(unsafe.Pointer(&b[0]))/pageSize) * 8
	for n := 0; n < len(scratch); {
		m, err := unix.Pread(im.pagemap, scratch[n:], off+int64(n))
		if err != nil || m <= 0 {
			return scratch, func(int) bool { return true }
		}
		n += m
	}
	return scratch, func(page int) bool {
		e := binary.LittleEndian.Uint64(scratch[page*8:])
		return e&pagemapSwapped != 0 || (e&pagemapPresent != 0 && e&pagemapFile == 0)
	}
}

// mapping returns a new private mapping of the image.
func (im *cowImage) mapping() ([]byte, error) {
	im.mu.RLock()
	defer im.mu.RUnlock()
	if im.fd < 0 {
		return nil, errors.New("snapshot image closed")
	}
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

// mapOnto maps the image privately at b's address, in place of what b
// held; b must already hold the image's bytes, so the guest using b
// sees no change. b is then a mapping like those of mapping.
func (im *cowImage) mapOnto(b []byte) error {
	im.mu.RLock()
	defer im.mu.RUnlock()
	if im.fd < 0 {
		return errors.New("snapshot image closed")
	}
	if len(b) != im.size {
		return fmt.Errorf("mapping of %d bytes for an image of %d", len(b), im.size)
	}
	_, err := unix.MmapPtr(im.fd, 0, unsafe.Pointer(&b[0]), uintptr(len(b)), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	if err != nil {
		return fmt.Errorf("mmap snapshot in place: %w", err)
	}
	return nil
}

// view returns a read-only mapping of the image: the snapshot's bytes
// without a copy.
func (im *cowImage) view() ([]byte, error) {
	im.mu.RLock()
	defer im.mu.RUnlock()
	if im.fd < 0 {
		return nil, errors.New("snapshot image closed")
	}
	b, err := unix.Mmap(im.fd, 0, im.size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap snapshot view: %w", err)
	}
	return b, nil
}

// reserve returns n bytes of private anonymous memory whose pages are
// committed only when touched: a linear memory that can grow to n
// without moving.
func reserve(n int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("reserve %d bytes: %w", n, err)
	}
	return b, nil
}

// release unmaps what reserve returned (with anything mapOnto mapped
// into it).
func release(b []byte) error { return unix.Munmap(b) }

// unmap releases a mapping.
func (im *cowImage) unmap(b []byte) error { return unix.Munmap(b) }

// close releases the image; mappings stay valid until unmapped.
// Idempotent.
func (im *cowImage) close() error {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.fd < 0 {
		return nil
	}
	if im.pagemap >= 0 {
		_ = unix.Close(im.pagemap)
		im.pagemap = -1
	}
	fd := im.fd
	im.fd = -1
	return unix.Close(fd)
}
