package host_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/hosttest"
)

// TestPackageDocs checks that every Go package in the repository has a
// package comment.
func TestPackageDocs(t *testing.T) {
	root := hosttest.Root(t)
	documented := map[string]bool{}
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		seen[dir] = true
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			documented[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range seen {
		if !documented[dir] {
			rel, _ := filepath.Rel(root, dir)
			t.Errorf("package %s has no package comment", rel)
		}
	}
	if len(seen) < 10 {
		t.Fatalf("found only %d packages under %s", len(seen), root)
	}
}
