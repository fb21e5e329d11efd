package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
)

func strp(s string) *string { return &s }
func boolp(b bool) *bool    { return &b }
func intp(n int) *int       { return &n }

func TestConvert(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want string // JSON of Output
	}{
		{"header rows as strings", Input{CSV: strp("a,b\n1,x\n2,y\n")},
			`{"columns":["a","b"],"rows":[{"a":"1","b":"x"},{"a":"2","b":"y"}],"rowCount":2,"truncated":false}`},
		{"typed", Input{CSV: strp("n,f,b,s,z,neg,exp\n42,2.50,true,007,0,-3,1e3\n"), Typed: true},
			`{"columns":["n","f","b","s","z","neg","exp"],"rows":[{"b":true,"exp":1e3,"f":2.50,"n":42,"neg":-3,"s":"007","z":0}],"rowCount":1,"truncated":false}`},
		{"typed keeps non-numbers", Input{CSV: strp("v\nNaN\n.5\n1.\n+1\n0x10\n\"1,5\"\nTrue\n"), Typed: true},
			`{"columns":["v"],"rows":[{"v":"NaN"},{"v":".5"},{"v":"1."},{"v":"+1"},{"v":"0x10"},{"v":"1,5"},{"v":"True"}],"rowCount":7,"truncated":false}`},
		{"quoted fields and newlines", Input{CSV: strp("name,note\n\"Doe, J\",\"line1\nline2\"\n\"say \"\"hi\"\"\",x\n")},
			`{"columns":["name","note"],"rows":[{"name":"Doe, J","note":"line1\nline2"},{"name":"say \"hi\"","note":"x"}],"rowCount":2,"truncated":false}`},
		{"ragged rows", Input{CSV: strp("a,b\n1\n2,3,4\n")},
			`{"columns":["a","b","column_3"],"rows":[{"a":"1","b":null,"column_3":null},{"a":"2","b":"3","column_3":"4"}],"rowCount":2,"truncated":false}`},
		{"duplicate and empty headers", Input{CSV: strp("x,x,,column_3\n1,2,3,4\n")},
			`{"columns":["x","x_2","column_3","column_3_2"],"rows":[{"column_3":"3","column_3_2":"4","x":"1","x_2":"2"}],"rowCount":1,"truncated":false}`},
		{"no header", Input{CSV: strp("1,2\n3\n"), Header: boolp(false), Typed: true},
			`{"rows":[[1,2],[3]],"rowCount":2,"truncated":false}`},
		{"tab delimiter", Input{CSV: strp("a\tb\n1\t2\n"), Delimiter: "tab"},
			`{"columns":["a","b"],"rows":[{"a":"1","b":"2"}],"rowCount":1,"truncated":false}`},
		{"escaped tab delimiter", Input{CSV: strp("a\tb\n1\t2\n"), Delimiter: `\t`},
			`{"columns":["a","b"],"rows":[{"a":"1","b":"2"}],"rowCount":1,"truncated":false}`},
		{"semicolon, trim, comment", Input{CSV: strp("# export\na ; b\n 1 ; 2 \n"), Delimiter: ";", TrimSpace: true, Comment: "#"},
			`{"columns":["a","b"],"rows":[{"a":"1","b":"2"}],"rowCount":1,"truncated":false}`},
		{"max rows", Input{CSV: strp("a\n1\n2\n3\n"), MaxRows: intp(2)},
			`{"columns":["a"],"rows":[{"a":"1"},{"a":"2"}],"rowCount":2,"truncated":true}`},
		{"max rows exact", Input{CSV: strp("a\n1\n2\n"), MaxRows: intp(2)},
			`{"columns":["a"],"rows":[{"a":"1"},{"a":"2"}],"rowCount":2,"truncated":false}`},
		{"header only", Input{CSV: strp("a,b\n")},
			`{"columns":["a","b"],"rows":[],"rowCount":0,"truncated":false}`},
		{"empty", Input{CSV: strp("")},
			`{"rows":[],"rowCount":0,"truncated":false}`},
		{"lazy quotes", Input{CSV: strp("a\nsay \"hi\" there\n"), LazyQuotes: true},
			`{"columns":["a"],"rows":[{"a":"say \"hi\" there"}],"rowCount":1,"truncated":false}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Convert("", tc.in)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("Convert = %s\nwant      %s", b, tc.want)
			}
		})
	}
}

func TestConvertFile(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "workspace/s.csv"), []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Convert(root, Input{Path: strp("s.csv"), Typed: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if want := `{"columns":["a","b"],"rows":[{"a":1,"b":2}],"rowCount":1,"truncated":false}`; string(b) != want {
		t.Errorf("Convert = %s, want %s", b, want)
	}
	if _, err := Convert(root, Input{Path: strp("missing.csv")}); !strings.Contains(fmtErr(err), "no such file") {
		t.Errorf("missing file: err = %v", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestConvertErrors(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"neither", Input{}, "exactly one of csv and path"},
		{"both", Input{CSV: strp(""), Path: strp("x")}, "exactly one of csv and path"},
		{"long delimiter", Input{CSV: strp(""), Delimiter: ",,"}, "delimiter must be one character"},
		{"quote delimiter", Input{CSV: strp(""), Delimiter: `"`}, "delimiter must be one character"},
		{"newline delimiter", Input{CSV: strp(""), Delimiter: "\n"}, "delimiter must be one character"},
		{"comment equals delimiter", Input{CSV: strp(""), Comment: ","}, "comment must be one character"},
		{"long comment", Input{CSV: strp(""), Comment: "//"}, "comment must be one character"},
		{"max rows zero", Input{CSV: strp(""), MaxRows: intp(0)}, "maxRows must be between"},
		{"bare quote in quoted field", Input{CSV: strp("a\n\"x\"y\"\n")}, "csv line 2, column 3"},
		{"bare quote in unquoted field", Input{CSV: strp("a\nsay \"hi\"\n")}, "csv line 2"},
		{"unterminated quote", Input{CSV: strp("a\n\"open\n")}, "csv line"},
		{"lazy quotes accept a stray quote", Input{CSV: strp("a\n\"x\"y\"\n"), LazyQuotes: true}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Convert("", tc.in)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("lazy quotes: err = %v, want success", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if !errors.Is(err, abi.ErrInvalidArguments) {
				t.Errorf("err = %v, want INVALID_ARGUMENTS", err)
			}
		})
	}
}

func TestIsJSONNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "1.5": true, "1e5": true, "1E-5": true, "-2.5e+3": true,
		"": false, "-": false, "01": false, "1.": false, ".1": false, "1e": false, "+1": false,
		"1_000": false, "Infinity": false, " 1": false, "1 ": false, "0x1": false,
	} {
		if got := isJSONNumber(s); got != want {
			t.Errorf("isJSONNumber(%q) = %v, want %v", s, got, want)
		}
	}
}
