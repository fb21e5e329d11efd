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

// TestDocsStandAlone keeps the project's docs and doc comments readable
// without documents a user does not have: no citation of the internal
// product specification (its name or a section sign with a number) and
// none of the internal style guide.
func TestDocsStandAlone(t *testing.T) {
	root := hosttest.Root(t)
	cite := regexp.MustCompile(`SPEC\b|STYLE\.md|§`)
	public := regexp.MustCompile(`(?i)(SemVer|semver\.org) §`) // public specifications may be cited
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
		switch filepath.Ext(name) {
		case ".go", ".md", ".json", ".yaml", ".txtar", ".ts", ".js", ".html":
		default:
			return nil
		}
		if name == "docs_cite_test.go" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if cite.MatchString(public.ReplaceAllString(line, "")) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d cites a document users do not have: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDocsCiteRealBenchmarks fails when docs/*.md name a benchmark
// function that does not exist (BENCHMARKS.md once cited two).
func TestDocsCiteRealBenchmarks(t *testing.T) {
	root := hosttest.Root(t)
	defined := map[string]bool{}
	fn := regexp.MustCompile(`(?m)^func (Benchmark\w+)\(`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fn.FindAllStringSubmatch(string(b), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	design, _ := filepath.Glob(filepath.Join(root, "docs", "design", "*.md"))
	docs = append(docs, design...)
	cited := regexp.MustCompile(`\bBenchmark[A-Z]\w*`)
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range cited.FindAllString(string(b), -1) {
			if !defined[name] {
				t.Errorf("%s cites %s, which no test file defines", filepath.Base(doc), name)
			}
		}
	}
}
