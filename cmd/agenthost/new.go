package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/internal/toolchain"
)

// templates holds one folder of source files per language; "__NAME__"
// and "__ID__" in them become the tool's name and ID, and ".tmpl" is
// dropped from each file name (so no template is compiled or vetted as
// part of this program).
//
//go:embed templates
var templates embed.FS

func newCommand() command {
	var lang string
	return command{
		name: "new", usage: "new tool ID --lang go|rust|c|assemblyscript|python|js [-o DIR]",
		summary: "write a working tool folder: manifest with schemas, source, examples, a test fixture; then agenthost build DIR",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.StringVar(&lang, "lang", "", "the tool's `LANGUAGE`: go, rust, c, assemblyscript, python or js")
			fs.StringVar(&e.out, "o", "", "the folder `DIR` to create (default: the tool's name)")
		},
		run: func(ctx context.Context, e *env, args []string) error { return runNew(e, args, lang) },
	}
}

// runNew writes the template of lang for the tool ID ("ns:name", or a
// bare name in the namespace "my") into a new folder.
func runNew(e *env, args []string, lang string) error {
	if len(args) != 2 || args[0] != "tool" {
		return usageError{"new takes: tool ID --lang LANGUAGE"}
	}
	l := toolchain.Lang(lang)
	if _, err := fs.Stat(templates, "templates/"+lang); lang == "" || err != nil {
		return usageError{fmt.Sprintf("--lang %q: want one of go, rust, c, assemblyscript, python, js", lang)}
	}
	id := args[1]
	if !strings.Contains(id, ":") {
		id = "my:" + id
	}
	ns, name, _ := strings.Cut(id, ":")
	if err := manifest.ValidID(id); err != nil {
		return usageError{fmt.Sprintf("tool ID %q: %v", id, err)}
	}
	dir := e.out
	if dir == "" {
		dir = name
	}
	if _, err := os.Stat(dir); err == nil {
		return usageError{fmt.Sprintf("%s already exists: new writes a new folder", dir)}
	}
	files, err := toolFiles(l, id, ns, name)
	if err != nil {
		return err
	}
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "wrote %s (%s, %s)\nnext: agenthost build %s\n", dir, id, lang, dir)
	return nil
}

// toolFiles returns the files of a new tool folder by path.
func toolFiles(lang toolchain.Lang, id, ns, name string) (map[string]string, error) {
	files := map[string]string{}
	sub, err := fs.Sub(templates, "templates/"+string(lang))
	if err != nil {
		return nil, err
	}
	fill := strings.NewReplacer("__NAME__", name, "__ID__", id, "__NS__", ns)
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		files[strings.TrimSuffix(p, ".tmpl")] = fill.Replace(string(b))
		return nil
	})
	if err != nil {
		return nil, err
	}
	const sample = "the quick brown fox\njumps over the lazy dog\n"
	var handler, security, example, input, readme string
	switch lang {
	case toolchain.Python, toolchain.JS:
		script, language := "main.py", "python"
		if lang == toolchain.JS {
			script, language = "main.js", "nodejs"
		}
		handler = fmt.Sprintf(`{"type": "external-script", "scriptPath": %q, "language": %q}`, script, language)
		readme = "Nothing to build: the host runs `" + script + "` under kernel isolation (docs/SCRIPTS.md)."
	case toolchain.AssemblyScript:
		handler = fmt.Sprintf(`{"type": "wasm", "abi": "extism", "entryPoint": "call", "module": "%s.wasm"}`, name)
		readme = "`agenthost build .` runs `npm ci` (or `npm install`), then `npx asc assembly/index.ts --outFile " + name + ".wasm --use abort=assembly/index/myAbort --optimize --runtime stub`."
	default:
		handler = fmt.Sprintf(`{"type": "wasm", "abi": "wasi-command", "module": "%s.wasm"}`, name)
		readme = "`agenthost build .` runs " + map[toolchain.Lang]string{
			toolchain.Go:   "`GOOS=wasip1 GOARCH=wasm go build -trimpath -buildvcs=false -ldflags=\"-s -w\" -o " + name + ".wasm .`",
			toolchain.Rust: "`rustc --target wasm32-wasip1 -C opt-level=2 -C strip=symbols -C debuginfo=0 -o " + name + ".wasm main.rs` (`wasm32-wasi` with an older rustc)",
			toolchain.C:    "`clang --target=wasm32-wasi --sysroot=/usr -O2 -s -Wl,--strip-all -o " + name + ".wasm main.c`",
		}[lang] + "."
	}
	if lang == toolchain.AssemblyScript {
		// An Extism plugin built with the AssemblyScript PDK has no file
		// system: its fixture is a canned HTTP response instead.
		input = `"url": {"type": "string", "pattern": "^https?://", "description": "A page to fetch and count instead of text."}`
		security = `{"networkAccess": {"allowHosts": ["example.com"]}, "limits": {"timeoutMs": 5000, "memoryMb": 64}}`
		example = `{"description": "a page, served by the test from a canned response", "input": {"url": "https://example.com/sample.txt"},
     "expectedOutput": {"words": 9, "lines": 2, "bytes": 44},
     "fixtures": {"http": [{"url": "https://example.com/sample.txt", "headers": {"Content-Type": "text/plain"}, "bodyFile": "testdata/sample.txt"}]}}`
	} else {
		input = `"path": {"type": "string", "minLength": 1, "description": "A workspace file to count instead of text, e.g. \"notes/todo.md\"."}`
		security = `{"fileAccess": {"allowRead": ["**"]}, "limits": {"timeoutMs": 5000, "memoryMb": 64}}`
		example = `{"description": "a workspace file, from the test fixture folder", "input": {"path": "sample.txt"},
     "expectedOutput": {"words": 9, "lines": 2, "bytes": 44},
     "fixtures": {"workspace": "testdata"}}`
	}
	files[name+".tool.json"] = fmt.Sprintf(`{
  "toolId": %q,
  "displayName": %q,
  "description": "Counts the words, lines and bytes of a text. Give the text itself as text, or %s.",
  "version": "0.1.0",
  "handler": %s,
  "parameters": {
    "type": "object",
    "additionalProperties": false,
    "minProperties": 1,
    "maxProperties": 1,
    "properties": {
      "text": {"type": "string", "description": "The text to count."},
      %s
    }
  },
  "output": {
    "type": "object",
    "additionalProperties": false,
    "required": ["words", "lines", "bytes"],
    "properties": {
      "words": {"type": "integer", "description": "Runs of non-space characters."},
      "lines": {"type": "integer", "description": "Lines, a last one without a newline included."},
      "bytes": {"type": "integer", "description": "Length in UTF-8 bytes."}
    }
  },
  "securityContext": %s,
  "examples": [
    {"description": "a short text", "input": {"text": "one two three\nfour"}, "expectedOutput": {"words": 4, "lines": 2, "bytes": 18}},
    %s
  ],
  "tags": ["text", %q]
}
`, id, name, map[bool]string{true: "a url to fetch it from", false: "the path of a workspace file"}[lang == toolchain.AssemblyScript],
		handler, input, security, example, string(lang))
	files["testdata/sample.txt"] = sample
	files["README.md"] = fmt.Sprintf(`# %s

An agenthost tool written in %s, made by `+"`agenthost new`"+`. It counts the words, lines and
bytes of a text.

- `+"`%s.tool.json`"+`: the manifest: what the tool takes and returns (JSON Schemas), what it
  may touch (`+"`securityContext`"+`) and examples that are its tests.
- `+"`testdata/`"+`: the test fixture of the second example.

Build, pin the module's digest and run the examples:

`+"```sh\nagenthost build .\n```"+`

%s Then `+"`agenthost test .`"+` runs the examples again, and
`+"`agenthost invoke --dir . %s '{\"text\": \"hello world\"}'`"+` calls the tool.
`, id, lang, name, readme, id)
	return files, nil
}
