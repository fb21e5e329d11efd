package plugins_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/registry"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated tool table in docs/TOOLS.md")

const (
	tableBegin = "<!-- tools table: generated from toolpacks/ by plugins/toolsdoc_test.go; go test ./plugins -run TestToolsDoc -update-docs -->\n"
	tableEnd   = "<!-- end of tools table -->\n"
)

// TestToolsDoc keeps the tool table of docs/TOOLS.md generated from the
// manifests under toolpacks/ (the prose once said ten tools while fourteen
// loaded). Run with -update-docs to rewrite it.
func TestToolsDoc(t *testing.T) {
	paths, failures := registry.Scan("../toolpacks")
	if len(failures) > 0 {
		t.Fatal(failures[0])
	}
	var tools []*manifest.Tool
	pack := map[*manifest.Tool]string{}
	for _, p := range paths {
		tl, err := registry.LoadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl)
		rel, _ := filepath.Rel("../toolpacks", p)
		pack[tl] = strings.Split(filepath.ToSlash(rel), "/")[0]
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].ToolID < tools[j].ToolID })
	var b strings.Builder
	b.WriteString(tableBegin)
	fmt.Fprintf(&b, "\n%d tools ship in `toolpacks/`:\n\n", len(tools))
	b.WriteString("| tool | pack | runs as | what it does | requests |\n|---|---|---|---|---|\n")
	for _, tl := range tools {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", tl.ToolID, pack[tl], runsAs(tl), firstSentence(tl.Description), requests(tl))
	}
	b.WriteString("\n" + tableEnd)
	doc, err := os.ReadFile("../docs/TOOLS.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/TOOLS.md lacks the generated-table markers %q ... %q", tableBegin, tableEnd)
	}
	want := s[:i] + b.String() + s[j+len(tableEnd):]
	if want == s {
		return
	}
	if *updateDocs {
		if err := os.WriteFile("../docs/TOOLS.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("docs/TOOLS.md's tool table is stale: run go test ./plugins -run TestToolsDoc -update-docs")
}

func runsAs(tl *manifest.Tool) string {
	h := tl.Handler
	switch {
	case h.ABI != "":
		return h.ABI
	case h.Language != "":
		return h.Language + " script"
	}
	return h.Type
}

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

func requests(tl *manifest.Tool) string {
	sc := tl.SecurityContext
	if sc == nil {
		return "nothing"
	}
	var out []string
	if fa := sc.FileAccess; fa != nil {
		if len(fa.AllowRead) > 0 {
			out = append(out, "read `"+strings.Join(fa.AllowRead, "`, `")+"`")
		}
		if len(fa.AllowWrite) > 0 {
			out = append(out, "write `"+strings.Join(fa.AllowWrite, "`, `")+"`")
		}
	}
	if na := sc.NetworkAccess; na != nil && len(na.AllowHosts) > 0 {
		out = append(out, "network `"+strings.Join(na.AllowHosts, "`, `")+"`")
	}
	if len(sc.Env) > 0 {
		out = append(out, "env "+strings.Join(sc.Env, ", "))
	}
	if len(out) == 0 {
		return "limits only"
	}
	return strings.Join(out, "; ")
}
