package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTutorial runs docs/TUTORIAL.md: every ```sh block, exactly as
// written and in order, as one bash script started in the repository's
// root with a fresh HOME, and checks that every line of every ```text
// block appears in what the script printed. A tutorial whose commands or
// outputs drift from the CLI fails here.
func TestTutorial(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and a tool; skipped with -short")
	}
	for _, prog := range []string{"bash", "ssh-keygen", "make"} {
		if _, err := exec.LookPath(prog); err != nil {
			if requireGuests {
				t.Fatalf("%s: %v", prog, err)
			}
			t.Skipf("the tutorial needs %s: %v", prog, err)
		}
	}
	root, _ := filepath.Abs("../..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "TUTORIAL.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := fencedBlocks(string(doc))
	if len(blocks["sh"]) < 8 || len(blocks["text"]) < 5 {
		t.Fatalf("found %d sh and %d text blocks", len(blocks["sh"]), len(blocks["text"]))
	}
	// The script's own background jobs (the registry) end with it.
	script := "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + strings.Join(blocks["sh"], "")
	// A fresh HOME, but the machine's Go caches: the tutorial builds with
	// them as a reader's machine would, without downloading or compiling
	// the standard library again.
	env := []string{"HOME=" + t.TempDir()}
	for _, k := range []string{"GOPATH", "GOMODCACHE", "GOCACHE"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tutorial's commands failed: %v\n%s", err, out)
	}
	for _, block := range blocks["text"] {
		for _, line := range strings.Split(block, "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.Contains(string(out), line) {
				t.Errorf("the tutorial shows %q, which the commands did not print:\n%s", line, out)
			}
		}
	}
}

// fencedBlocks returns the bodies of a Markdown document's fenced code
// blocks by info string, in order.
func fencedBlocks(doc string) map[string][]string {
	out := map[string][]string{}
	var lang string
	var body strings.Builder
	in := false
	for _, line := range strings.SplitAfter(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && strings.HasPrefix(trimmed, "```"):
			in, lang = true, strings.TrimPrefix(trimmed, "```")
			body.Reset()
		case in && trimmed == "```":
			in = false
			out[lang] = append(out[lang], body.String())
		case in:
			body.WriteString(line)
		}
	}
	return out
}
