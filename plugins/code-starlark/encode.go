package main

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"unicode/utf8"

	"go.starlark.net/starlark"
)

// errSlowPath sends a value to the json module's encoder.
var errSlowPath = errors.New("not on the fast path")

// maxFastDepth is the nesting the fast encoder follows; deeper values
// (and cycles) go to the json module's encoder, which reports a cycle.
const maxFastDepth = 64

// appendJSON appends the JSON of v as the json module's encode writes
// it (the same bytes: dict keys sorted, strings quoted alike), for the
// values tool arguments are made of: None, bools, ints that fit 64
// bits, strings, lists, tuples and dicts with string keys. Anything else
// (floats, big ints, other types, deep nesting) is errSlowPath. Inside
// WebAssembly the json module's encoder, reached through starlark.Call
// and formatting every int through math/big, was a third of the
// interpreter's work per inner call.
func appendJSON(b []byte, v starlark.Value, depth int) ([]byte, error) {
	if depth > maxFastDepth {
		return nil, errSlowPath
	}
	switch x := v.(type) {
	case starlark.NoneType:
		return append(b, "null"...), nil
	case starlark.Bool:
		if x {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case starlark.Int:
		n, ok := x.Int64()
		if !ok {
			return nil, errSlowPath
		}
		return strconv.AppendInt(b, n, 10), nil
	case starlark.String:
		return appendQuoted(b, string(x)), nil
	case *starlark.List:
		return appendArray(b, x, x.Len(), depth)
	case starlark.Tuple:
		return appendArray(b, x, x.Len(), depth)
	case *starlark.Dict:
		items := x.Items()
		for _, kv := range items {
			if _, ok := kv[0].(starlark.String); !ok {
				return nil, errSlowPath // the json module's error names the key's type
			}
		}
		slices.SortFunc(items, func(a, c starlark.Tuple) int {
			ka, kc := a[0].(starlark.String), c[0].(starlark.String)
			switch {
			case ka < kc:
				return -1
			case ka > kc:
				return 1
			}
			return 0
		})
		b = append(b, '{')
		for i, kv := range items {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendQuoted(b, string(kv[0].(starlark.String)))
			b = append(b, ':')
			var err error
			if b, err = appendJSON(b, kv[1], depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, errSlowPath
}

// appendArray appends a list or tuple.
func appendArray(b []byte, x starlark.Indexable, n, depth int) ([]byte, error) {
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendJSON(b, x.Index(i), depth+1); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendQuoted quotes s as the json module does: strconv for printable
// ASCII, encoding/json for the rest.
func appendQuoted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == 0x7f {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	return strconv.AppendQuote(b, s)
}
