package main

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
)

// TestAppendJSON: the fast encoder writes the json module's bytes for
// every value it takes, and hands every other value (floats, big ints,
// non-string keys, cycles, deep nesting) to the module, whose result or
// error toJSON returns.
func TestAppendJSON(t *testing.T) {
	cyclic := starlark.NewList(nil)
	_ = cyclic.Append(cyclic)
	deep := starlark.Value(starlark.None)
	for range 100 {
		deep = starlark.NewList([]starlark.Value{deep})
	}
	dict := func(kv ...starlark.Value) *starlark.Dict {
		d := starlark.NewDict(len(kv) / 2)
		for i := 0; i < len(kv); i += 2 {
			_ = d.SetKey(kv[i], kv[i+1])
		}
		return d
	}
	big, _ := starlark.Call(&starlark.Thread{}, starlark.Universe["int"], starlark.Tuple{starlark.String("123456789012345678901234567890")}, nil)
	tests := []struct {
		name   string
		v      starlark.Value
		fast   bool
		errSub string // toJSON's error
	}{
		{name: "scalars", v: starlark.Tuple{starlark.None, starlark.True, starlark.False, starlark.MakeInt(-7), starlark.MakeInt64(1 << 62)}, fast: true},
		{name: "strings", v: starlark.NewList([]starlark.Value{starlark.String(""), starlark.String(`a"b\c`), starlark.String("tab\tnl\n"), starlark.String("é ☃ \U0001F600"), starlark.String("<&>"), starlark.String("bad \xff utf-8")}), fast: true},
		{name: "dict sorted", v: dict(starlark.String("b"), starlark.MakeInt(2), starlark.String("a"), dict(starlark.String("z"), starlark.None, starlark.String("y"), starlark.NewList(nil))), fast: true},
		{name: "float", v: dict(starlark.String("x"), starlark.Float(1.5))},
		{name: "big int", v: big},
		{name: "non-string key", v: dict(starlark.MakeInt(1), starlark.None), errSub: "int key, want string"},
		{name: "cycle", v: cyclic, errSub: "cycle"},
		{name: "deep", v: deep},
		{name: "NaN", v: starlark.Float(math.NaN()), errSub: "non-finite"},
	}
	thread := &starlark.Thread{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ferr := appendJSON(nil, tc.v, 0)
			if fast := ferr == nil; fast != tc.fast {
				t.Fatalf("fast path %v, want %v (%v)", fast, tc.fast, ferr)
			}
			got, err := toJSON(thread, tc.v)
			want, werr := starlark.Call(thread, starjson.Module.Members["encode"], starlark.Tuple{tc.v}, nil)
			if tc.errSub != "" || werr != nil {
				if err == nil || werr == nil || (tc.errSub != "" && !strings.Contains(err.Error(), tc.errSub)) {
					t.Fatalf("got %s, %v; the module: %v", got, err, werr)
				}
				return
			}
			if err != nil || string(got) != string(want.(starlark.String)) {
				t.Fatalf("got %s, %v; the module wrote %s", got, err, want)
			}
		})
	}
}

// TestAppendJSONRandom compares the fast encoder with the json module on
// random nested values of every kind it takes.
func TestAppendJSONRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var gen func(depth int) starlark.Value
	gen = func(depth int) starlark.Value {
		k := r.IntN(7)
		if depth > 4 {
			k = r.IntN(4)
		}
		switch k {
		case 0:
			return starlark.None
		case 1:
			return starlark.Bool(r.IntN(2) == 0)
		case 2:
			return starlark.MakeInt64(r.Int64() - r.Int64())
		case 3:
			runes := []rune("aZ09 \"\\/\t\n\x01é☃\U0001F600")
			var sb strings.Builder
			for range r.IntN(8) {
				sb.WriteRune(runes[r.IntN(len(runes))])
			}
			return starlark.String(sb.String())
		case 4:
			l := starlark.NewList(nil)
			for range r.IntN(4) {
				_ = l.Append(gen(depth + 1))
			}
			return l
		case 5:
			tu := starlark.Tuple{}
			for range r.IntN(4) {
				tu = append(tu, gen(depth+1))
			}
			return tu
		}
		d := starlark.NewDict(4)
		for range r.IntN(4) {
			_ = d.SetKey(starlark.String(string(rune('a'+r.IntN(26)))), gen(depth+1))
		}
		return d
	}
	thread := &starlark.Thread{}
	for i := range 2000 {
		v := gen(0)
		got, err := appendJSON(nil, v, 0)
		if err != nil {
			t.Fatalf("value %d (%s): %v", i, v, err)
		}
		want, err := starlark.Call(thread, starjson.Module.Members["encode"], starlark.Tuple{v}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want.(starlark.String)) {
			t.Fatalf("value %d: got %s, the module wrote %s", i, got, want)
		}
		var a, b any
		if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want.(starlark.String)), &b) != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("value %d: not the same JSON value", i)
		}
	}
}
