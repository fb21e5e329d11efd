package script

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/host/manifest"
)

// A script is run from a private copy of the bytes checked at Prepare,
// never from its file in the tool's folder: a check of that file before
// each run would race with an edit between the check and the
// interpreter's open (docs/RATIONALE.md, "Why run a script from a
// verified copy?").

// verifiedScript returns the bytes of the script the tool runs: for a
// tool loaded from its manifest, as read now and checked against the
// digest seen at load (and, under requireSignature, the signed one); a
// changed file is an error. A tool not loaded from a manifest has no
// digest: its script as read at Prepare.
func verifiedScript(tool *manifest.Tool, script string) ([]byte, error) {
	if tool.Digest() != "" {
		return tool.ReadModule()
	}
	return os.ReadFile(script)
}

// stage writes the verified script into a fresh folder under base, with
// the file name it has in the tool's folder, and returns the folder.
// Every other entry of the script's own folder is linked there, so that
// what the script reaches by its own location (a helper module it
// imports, a data file next to it) is still found. The folder is the
// host's, granted to the call read-only; the caller removes it.
func (p *prepared) stage(base string) (string, error) {
	dir, err := os.MkdirTemp(base, "agenthost-script-")
	if err != nil {
		return "", fmt.Errorf("stage the script: %w", err)
	}
	fail := func(err error) (string, error) {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("stage the script: %w", err)
	}
	// Readable by the call's own uid (a root host), which may not own it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(err)
	}
	src, name := filepath.Split(p.script)
	entries, err := os.ReadDir(src)
	if err != nil {
		return fail(err)
	}
	for _, e := range entries {
		if e.Name() != name {
			if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				return fail(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, name), p.code, 0o644); err != nil {
		return fail(err)
	}
	return dir, nil
}
