package script_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/runner/script"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func requireNpm(t *testing.T) {
	t.Helper()
	requireLang(t, script.LangNode)
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not installed")
	}
}

func TestNpmDependencies(t *testing.T) {
	requireNpm(t)
	r := newRunner(t)
	f := newFixture(t, script.LangNode, `const greet = require("greet");
process.stdout.write(JSON.stringify(greet("world")));`)
	writeFiles(t, f.tool.Dir, map[string]string{
		"package.json":              `{"name":"t","version":"1.0.0","private":true,"dependencies":{"greet":"file:vendor/greet"}}`,
		"vendor/greet/package.json": `{"name":"greet","version":"1.0.0","main":"index.js"}`,
		"vendor/greet/index.js":     `module.exports = n => "hello " + n;`,
	})
	p := prepare(t, r, f)
	for i := 0; i < 2; i++ {
		res := call(t, p, `{}`)
		if res.Err != nil || string(res.Output) != `"hello world"` {
			t.Fatalf("call %d: %v %s %q", i, res.Err, res.Output, res.Logs)
		}
	}
	// A second Prepare reuses the cache: the install marker is there.
	ok, _ := filepath.Glob(filepath.Join(script.CacheDir(r), "npm", "test_tool", "*", ".agenthost-ok"))
	if len(ok) != 1 {
		t.Fatalf("want one installed cache folder, got %v", ok)
	}
	prepare(t, r, f)
}

func TestNpmFailureCached(t *testing.T) {
	requireNpm(t)
	r := newRunner(t)
	f := newFixture(t, script.LangNode, `process.stdout.write(JSON.stringify(require("greet")("x")))`)
	writeFiles(t, f.tool.Dir, map[string]string{
		"package.json": `{"name":"t","version":"1.0.0","private":true,"dependencies":{"greet":"file:vendor/greet-1.0.0.tgz"}}`,
	})
	if err := prepareErr(t, r, f); !hasCode(err, abi.CodeLoadError) || !strings.Contains(err.Message, "dependency install failed") {
		t.Fatalf("want LOAD_ERROR about the dependency, got %v", err)
	}
	// Supplying the tarball without changing package.json does not
	// retry: the failure is remembered for this dependency digest.
	writeTarball(t, filepath.Join(f.tool.Dir, "vendor", "greet-1.0.0.tgz"))
	if err := prepareErr(t, r, f); !hasCode(err, abi.CodeLoadError) || !strings.Contains(err.Message, "remove it to retry") {
		t.Fatalf("failure not cached: %v", err)
	}
	// A new runner on a fresh cache installs it.
	res := call(t, prepare(t, newRunner(t), f), `{}`)
	if res.Err != nil || string(res.Output) != `"hello x"` {
		t.Fatalf("install from the tarball: %v %s", res.Err, res.Output)
	}
}

// writeTarball writes an npm package tarball of package greet.
func writeTarball(t *testing.T, path string) {
	t.Helper()
	writeTarGz(t, path, [][2]string{
		{"package/package.json", `{"name":"greet","version":"1.0.0","main":"index.js"}`},
		{"package/index.js", `module.exports = n => "hello " + n;`},
	})
}

// writeTarGz writes a gzipped tar of regular files (name, body) at path.
func writeTarGz(t *testing.T, path string, files [][2]string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeWheel builds a minimal pure-Python wheel of package tinypkg.
func writeWheel(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	zf, err := os.Create(filepath.Join(dir, "tinypkg-0.1-py3-none-any.whl"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(zf)
	files := []struct{ name, body string }{
		{"tinypkg/__init__.py", "def shout(s):\n    return s.upper() + '!'\n"},
		{"tinypkg-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n"},
		{"tinypkg-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: agenthost-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
		{"tinypkg-0.1.dist-info/RECORD", "tinypkg/__init__.py,,\ntinypkg-0.1.dist-info/METADATA,,\ntinypkg-0.1.dist-info/WHEEL,,\ntinypkg-0.1.dist-info/RECORD,,\n"},
	}
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zf.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestVenvDependencies(t *testing.T) {
	requireLang(t, script.LangPython)
	r := newRunner(t)
	f := newFixture(t, script.LangPython, `import json, sys, tinypkg
json.dump({"out": tinypkg.shout("hi"), "venv": sys.prefix != sys.base_prefix}, sys.stdout)`)
	writeFiles(t, f.tool.Dir, map[string]string{"requirements.txt": "tinypkg==0.1\n"})
	writeWheel(t, filepath.Join(f.tool.Dir, "wheels"))
	res := call(t, prepare(t, r, f), `{}`)
	if res.Err != nil || string(res.Output) != `{"out": "HI!", "venv": true}` {
		t.Fatalf("%v %s %q", res.Err, res.Output, res.Logs)
	}
}

func TestVenvMissingWheel(t *testing.T) {
	requireLang(t, script.LangPython)
	r := newRunner(t)
	f := newFixture(t, script.LangPython, pyEcho)
	writeFiles(t, f.tool.Dir, map[string]string{"requirements.txt": "not-shipped==1.0\n"})
	if err := prepareErr(t, r, f); !hasCode(err, abi.CodeLoadError) || !strings.Contains(err.Message, "dependency install failed") {
		t.Fatalf("want LOAD_ERROR about the dependency, got %v", err)
	}
}

// prepareErr prepares f and returns its load error (nil when it loaded).
func prepareErr(t *testing.T, r *script.Runner, f *fixture) *abi.Error {
	t.Helper()
	_, err := r.Prepare(context.Background(), f.tool, f.grant)
	if err == nil {
		return nil
	}
	var ae *abi.Error
	if !errors.As(err, &ae) {
		t.Fatalf("prepare error %v is not an *abi.Error", err)
	}
	return ae
}

// TestSdistNeverBuilt pins the critical hole: a wheels/ folder holding a
// source distribution made pip run its setup.py outside the sandbox, as
// root, with the operator's environment (it read /etc/shadow). Now only
// binary wheels install, inside the sandbox; an sdist-only requirement is a
// LOAD_ERROR that says so, and the setup.py never runs.
func TestSdistNeverBuilt(t *testing.T) {
	requireLang(t, script.LangPython)
	r := newRunner(t)
	f := newFixture(t, script.LangPython, pyEcho)
	marker := filepath.Join(t.TempDir(), "setup-py-ran")
	writeFiles(t, f.tool.Dir, map[string]string{"requirements.txt": "evil==1.0\n"})
	setup := "import shutil\nopen(" + strconv.Quote(marker) + ", 'w').write(open('/etc/shadow').read() if __import__('os').path.exists('/etc/shadow') else 'ran')\nfrom setuptools import setup\nsetup(name='evil', version='1.0')\n"
	writeSdist(t, filepath.Join(f.tool.Dir, "wheels", "evil-1.0.tar.gz"), setup)
	err := prepareErr(t, r, f)
	if !hasCode(err, abi.CodeLoadError) || !strings.Contains(err.Message, "source distributions (evil-1.0.tar.gz)") {
		t.Fatalf("want LOAD_ERROR naming the sdist, got %v", err)
	}
	if _, serr := os.Stat(marker); !os.IsNotExist(serr) {
		t.Fatalf("the sdist's setup.py ran (marker %s exists)", marker)
	}
}

// writeSdist writes a source distribution tarball holding setup.py.
func writeSdist(t *testing.T, path, setup string) {
	t.Helper()
	writeTarGz(t, path, [][2]string{
		{"evil-1.0/setup.py", setup},
		{"evil-1.0/PKG-INFO", "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n"},
	})
}
