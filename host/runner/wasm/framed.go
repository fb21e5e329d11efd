package wasm

import (
	"encoding/binary"
	"encoding/json"
)

// The stored form of the runner's cached files (reactorcache.go,
// snapshotcache.go): the header's length (4 bytes, little-endian), the
// header (JSON), then the body's parts one after another. The file cache
// checks the whole file's digest before unframe sees it.

// frame returns hdr and parts in the stored form.
func frame(hdr any, parts ...[]byte) ([]byte, error) {
	h, err := json.Marshal(hdr)
	if err != nil {
		return nil, err
	}
	n := 4 + len(h)
	for _, p := range parts {
		n += len(p)
	}
	out := binary.LittleEndian.AppendUint32(make([]byte, 0, n), uint32(len(h)))
	out = append(out, h...)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// unframe decodes b's header into hdr and returns the body; false when b
// is not in the stored form.
func unframe(b []byte, hdr any) ([]byte, bool) {
	if len(b) < 4 {
		return nil, false
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n > len(b)-4 || json.Unmarshal(b[4:4+n], hdr) != nil {
		return nil, false
	}
	return b[4+n:], true
}
