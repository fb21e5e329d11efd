//go:build !linux

package wasm

import "errors"

// cowImage is unavailable outside Linux: pooled instances are restored by
// copying the snapshot (see cow_linux.go).
type cowImage struct{ stored int }

func newCOWImage([]byte) (*cowImage, error) {
	return nil, errors.New("copy-on-write snapshots need Linux")
}

func (*cowImage) mapping() ([]byte, error) { return nil, errors.New("unsupported") }
func (*cowImage) reset([]byte) error       { return errors.New("unsupported") }
func (*cowImage) unmap([]byte) error       { return nil }
func (*cowImage) written(_, scratch []byte) ([]byte, func(int) bool) {
	return scratch, func(int) bool { return true }
}
func (*cowImage) close() error          { return nil }
func (*cowImage) mapOnto([]byte) error  { return errors.New("unsupported") }
func (*cowImage) view() ([]byte, error) { return nil, errors.New("unsupported") }
func reserve(int) ([]byte, error)       { return nil, errors.New("parked commands need Linux") }
func release([]byte) error              { return nil }
