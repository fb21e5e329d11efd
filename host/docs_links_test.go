package host_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/hosttest"
)

// TestDocsLinksResolve keeps the documentation's links working when a
// document moves: every relative Markdown link of a .md file must name a
// file or folder that exists, and every "docs/….md" a .md or .go file
// mentions must exist under the repository root.
func TestDocsLinksResolve(t *testing.T) {
	root := hosttest.Root(t)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mention := regexp.MustCompile(`\bdocs/(design/)?[A-Z][A-Z0-9_-]*\.md\b`)
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(name)
		if ext != ".md" && ext != ".go" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range mention.FindAllString(string(b), -1) {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(m))); err != nil {
				t.Errorf("%s mentions %s, which does not exist", rel, m)
			}
			checked++
		}
		if ext != ".md" {
			return nil
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), filepath.FromSlash(target))); err != nil {
				t.Errorf("%s links to %s, which does not exist", rel, m[1])
			}
			checked++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d links", checked)
	}
}
