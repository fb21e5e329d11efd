package action_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/action"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/*.txtar")

// golden is the JSON pinned in a want section.
type golden struct {
	ResponseText string        `json:"responseText"`
	Calls        []action.Call `json:"calls,omitempty"`
	Ignored      []string      `json:"ignored,omitempty"`
	Error        *abi.Error    `json:"error,omitempty"`
}

// goldenCase is one testdata/*.txtar file: a prose header, an input
// section (its final newline removed), optional options JSON, and want.
type goldenCase struct {
	path    string
	archive *txtar.Archive
	input   string
	opts    action.Options
	want    []byte
}

func loadGoldens(t testing.TB) []goldenCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	for _, path := range paths {
		a, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c := goldenCase{path: path, archive: a}
		if len(bytes.TrimSpace(a.Comment)) == 0 {
			t.Fatalf("%s: missing the prose header that names what the case pins", path)
		}
		found := false
		for _, f := range a.Files {
			switch f.Name {
			case "input":
				c.input = strings.TrimSuffix(string(f.Data), "\n")
				found = true
			case "options":
				if err := json.Unmarshal(f.Data, &c.opts); err != nil {
					t.Fatalf("%s: options: %v", path, err)
				}
			case "want":
				c.want = f.Data
			default:
				t.Fatalf("%s: unknown section %q", path, f.Name)
			}
		}
		if !found {
			t.Fatalf("%s: no input section", path)
		}
		cases = append(cases, c)
	}
	return cases
}

func render(t testing.TB, res *action.Result, err error) []byte {
	t.Helper()
	g := golden{}
	if res == nil {
		t.Fatal("Parse returned a nil *Result")
	}
	g.ResponseText = res.ResponseText
	if err != nil {
		var ae *abi.Error
		if !errors.As(err, &ae) {
			t.Fatalf("error is %T, want *abi.Error: %v", err, err)
		}
		g.Error = ae
	} else {
		g.Calls = res.Calls
		g.Ignored = res.Ignored
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGoldens(t *testing.T) {
	cases := loadGoldens(t)
	if len(cases) < 60 {
		t.Errorf("only %d golden cases; protocol coverage wants at least 60", len(cases))
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(c.path), ".txtar"), func(t *testing.T) {
			res, err := action.Parse(c.input, c.opts)
			got := render(t, res, err)
			if *update {
				a := c.archive
				files := a.Files[:0]
				for _, f := range a.Files {
					if f.Name != "want" {
						files = append(files, f)
					}
				}
				a.Files = append(files, txtar.File{Name: "want", Data: got})
				if err := os.WriteFile(c.path, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !bytes.Equal(got, c.want) {
				t.Errorf("Parse mismatch\n--- got\n%s--- want\n%s", got, c.want)
			}
			if err == nil {
				checkRoundTrip(t, c.input, res)
			}
		})
	}
}

// checkRoundTrip asserts the fuzz properties on a successful parse: a
// second parse is identical, and Render → Parse gives the same calls.
func checkRoundTrip(t testing.TB, input string, res *action.Result) {
	t.Helper()
	again, err := action.Parse(input, action.Options{})
	if err != nil {
		t.Fatalf("second parse failed: %v", err)
	}
	if !sameCalls(res.Calls, again.Calls) || res.ResponseText != again.ResponseText {
		t.Fatalf("second parse differs")
	}
	if len(res.Calls) == 0 {
		return
	}
	out := action.Render(res.Calls)
	back, err := action.Parse(out, action.Options{MaxCalls: len(res.Calls), MaxBytes: 1 << 30, MaxDepth: 1 << 20})
	if err != nil {
		t.Fatalf("Parse(Render(calls)) failed: %v\n%s", err, out)
	}
	if !sameCalls(res.Calls, back.Calls) {
		a, _ := json.Marshal(res.Calls)
		b, _ := json.Marshal(back.Calls)
		t.Fatalf("round trip changed calls\nrendered:\n%s\nbefore: %s\nafter:  %s", out, a, b)
	}
}

func sameCalls(a, b []action.Call) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
