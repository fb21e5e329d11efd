package schema_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/agenthost/agenthost/host/schema"
)

// FuzzCoerce checks that Coerce never panics, never modifies its input and
// is idempotent, and that Validate of the result never panics. Seeds are
// the txtar files in testdata/fuzz/FuzzCoerce at the repository root, each
// with a schema.json and a value.json section.
func FuzzCoerce(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("..", "..", "testdata", "fuzz", "FuzzCoerce", "*.txtar"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds: %v", err)
	}
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		ar := txtar.Parse(data)
		var sch, val []byte
		for _, file := range ar.Files {
			switch file.Name {
			case "schema.json":
				sch = file.Data
			case "value.json":
				val = file.Data
			}
		}
		if sch == nil || val == nil {
			f.Fatalf("%s: needs schema.json and value.json sections", p)
		}
		f.Add(sch, val)
	}
	f.Fuzz(func(t *testing.T, sch, val []byte) {
		s, err := schema.Compile(sch, "mem://fuzz/schema.json")
		if err != nil {
			return
		}
		d := json.NewDecoder(bytes.NewReader(val))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return
		}
		var orig any
		d2 := json.NewDecoder(bytes.NewReader(val))
		d2.UseNumber()
		_ = d2.Decode(&orig)
		once := s.Coerce(v)
		twice := s.Coerce(once)
		if !reflect.DeepEqual(once, twice) {
			t.Fatalf("not idempotent:\nonce  %#v\ntwice %#v", once, twice)
		}
		if !reflect.DeepEqual(v, orig) {
			t.Fatalf("input modified: %#v", v)
		}
		_ = s.Validate(once)
		if _, err := schema.Canonical(once); err != nil {
			t.Fatalf("coerced value does not encode: %v", err)
		}
	})
}
