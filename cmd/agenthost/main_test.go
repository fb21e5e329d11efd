package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden runs each testdata/*.txtar: its "args" section (one argument
// per line; $TOOLPACKS and $TESTDATA expand) with "stdin" on standard
// input, and compares "stdout" and "exit". Durations are normalised.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	root, _ := filepath.Abs("../..")
	if _, err := os.Stat(filepath.Join(root, "toolpacks", "core", "echo.wasm")); err != nil {
		t.Fatalf("toolpacks are not built; run `make toolpacks` first (%v)", err)
	}
	cache := filepath.Join(os.TempDir(), "agenthost-test-cache")
	t.Setenv("XDG_CACHE_HOME", cache)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := map[string]string{}
			for _, f := range ar.Files {
				sections[f.Name] = string(f.Data)
			}
			expand := strings.NewReplacer("$TOOLPACKS", filepath.Join(root, "toolpacks"), "$TESTDATA", filepath.Join(root, "testdata"), "$CMDTESTDATA", filepath.Join(root, "cmd", "agenthost", "testdata"))
			var args []string
			for _, line := range strings.Split(strings.TrimSpace(sections["args"]), "\n") {
				if line = strings.TrimSpace(line); line != "" {
					args = append(args, expand.Replace(line))
				}
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, strings.NewReader(sections["stdin"]), &stdout, &stderr)
			got := normalise(stdout.String(), root)
			if *update {
				for i := range ar.Files {
					switch ar.Files[i].Name {
					case "stdout":
						ar.Files[i].Data = []byte(got)
					case "exit":
						ar.Files[i].Data = []byte(strconv.Itoa(code) + "\n")
					}
				}
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := strings.TrimSpace(sections["exit"]); want != strconv.Itoa(code) {
				t.Errorf("exit %d, want %s; stderr:\n%s", code, want, stderr.String())
			}
			if want, ok := sections["stdout"]; ok && got != want {
				t.Errorf("stdout differs:\n--- got ---\n%s\n--- want ---\n%s\nstderr:\n%s", got, want, stderr.String())
			}
			if want, ok := sections["stderr-contains"]; ok && !strings.Contains(stderr.String(), strings.TrimSpace(want)) {
				t.Errorf("stderr lacks %q:\n%s", strings.TrimSpace(want), stderr.String())
			}
		})
	}
}

var (
	// Module digests depend on the toolchain that built the plugins.
	digests   = regexp.MustCompile(`(digest:    sha256:|sha256:)[0-9a-f]{64}`)
	durations = regexp.MustCompile(`"durationMs": [0-9.e+-]+`)
	memory    = regexp.MustCompile(`"memoryBytes": [1-9][0-9]*`)
	callIDs   = regexp.MustCompile(`call_[0-9a-f]{12}_`)
)

// normalise removes what differs between runs and machines.
func normalise(s, root string) string {
	s = durations.ReplaceAllString(s, `"durationMs": 0`)
	s = digests.ReplaceAllString(s, "${1}<digest>")
	// Guest memory depends on the Go toolchain that built the plugins.
	s = memory.ReplaceAllString(s, `"memoryBytes": "nonzero"`)
	s = strings.ReplaceAll(s, `"`+runtime.Version()+`"`, `"$GOVERSION"`)
	// An agent run's tool-call IDs are random per run, by design.
	s = callIDs.ReplaceAllString(s, "call_<run>_")
	// audit's list of this machine's kernel protections is not pinned.
	if i := strings.Index(s, "\nisolation on this machine:\n"); i >= 0 {
		s = s[:i] + "\nisolation on this machine: (depends on the machine; not pinned)\n"
	}
	return strings.ReplaceAll(s, root, "$ROOT")
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no command", nil, 2},
		{"unknown command", []string{"frobnicate"}, 2},
		{"unknown flag", []string{"list", "--frob"}, 2},
		{"describe without id", []string{"describe"}, 2},
		{"bad log level", []string{"list", "--log-level", "loud"}, 2},
		{"missing policy", []string{"list", "--policy", "/nonexistent/policy.yaml"}, 2},
		{"bad audit format", []string{"audit", "--format", "pdf"}, 2},
		{"help", []string{"help"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr); code != tc.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tc.code, stderr.String())
			}
		})
	}
}

func TestParseInterleaved(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	j := fs.Bool("json", false, "")
	pos, err := parseInterleaved(fs, []string{"core:echo", "--json", "{}"})
	if err != nil || !*j || strings.Join(pos, " ") != "core:echo {}" {
		t.Fatalf("pos %v json %v err %v", pos, *j, err)
	}
}
