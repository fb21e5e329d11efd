package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun builds agenthost and runs the client against it.
func TestRun(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agenthost")
	build := exec.Command("go", "build", "-o", bin, "./cmd/agenthost")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	err := run(context.Background(), bin, "../../toolpacks")
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"connected to agenthost", "tools/list: ", "core__echo", `tools/call text__stats (isError false): {"characters":27`, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
