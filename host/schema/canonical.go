package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Canonical returns v as compact JSON with the keys of every object sorted
// and without HTML escaping, the form in which arguments are handed to a
// guest.
//
// encoding/json already writes map[string]any with sorted keys, so a value
// made of maps, slices and scalars (what encoding/json decodes into, and
// what [Schema.Coerce] returns) is encoded in one pass. Anything else
// (structs, json.RawMessage, typed maps) is encoded, decoded and encoded
// again, so that its objects are sorted too. json.Number values are written
// as they are, so large integers keep every digit.
func Canonical(v any) ([]byte, error) {
	if !plain(v, 0) {
		b, err := marshal(v)
		if err != nil {
			return nil, err
		}
		if v, err = decode(b); err != nil {
			return nil, fmt.Errorf("canonical json: %w", err)
		}
	}
	return marshal(v)
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// plain reports whether v is built only of the types encoding/json decodes
// into (deeper than 10000 levels counts as not plain; encoding then fails).
func plain(v any, depth int) bool {
	if depth > 10000 {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string, float64, json.Number:
		return true
	case map[string]any:
		for _, e := range x {
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
