package audit

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"
)

// Write writes the diff as "text", "json", "markdown" or "html" (one
// self-contained page: inline style, no script, nothing fetched).
func (d DiffReport) Write(w io.Writer, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	case "text":
		e := &errWriter{w: w}
		e.printf("agenthost audit --diff: %s → %s: %s\n", d.Old, d.New, d.summary())
		for _, c := range d.Changes {
			e.printf("  %-6s %s: %s: %s\n", c.Level, c.Tool, c.Kind, c.What)
		}
		return e.err
	case "markdown":
		e := &errWriter{w: w}
		e.printf("# What the new toolpacks ask for beyond the old\n\n%s → %s: %s\n\n", md(d.Old), md(d.New), d.summary())
		if len(d.Changes) > 0 {
			e.printf("| severity | tool | change | what |\n|---|---|---|---|\n")
			for _, c := range d.Changes {
				e.printf("| %s | %s | %s | %s |\n", c.Level, code(c.Tool), md(c.Kind), md(c.What))
			}
		}
		return e.err
	case "html":
		return diffPage().Execute(w, struct {
			DiffReport
			Summary string
		}{d, d.summary()})
	}
	return fmt.Errorf("audit: format %q: want text, json, markdown or html", format)
}

func (d DiffReport) summary() string {
	n := map[string]int{}
	for _, c := range d.Changes {
		n[c.Level]++
	}
	if len(d.Changes) == 0 {
		return "nothing new"
	}
	var parts []string
	for _, l := range []string{"high", "medium", "low"} {
		if n[l] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[l], l))
		}
	}
	return plural(len(d.Changes), "1 change", fmt.Sprintf("%d changes", len(d.Changes))) + " (" + strings.Join(parts, ", ") + ")"
}

// diffPage is parsed on first use: parsing it at package initialisation
// cost every command of the CLI about a millisecond.
var diffPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("diff").Parse(diffPageText))
})

const diffPageText = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>agenthost audit diff: {{.Old}} → {{.New}}</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:2rem;color:#1b1b1b}
h1{font-size:1.3rem} table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #ddd;padding:.4rem .6rem;text-align:left;vertical-align:top}
td.what{font-family:ui-monospace,monospace;font-size:.9em;word-break:break-all}
.high{background:#fde2e1}.medium{background:#fff4d6}.low{background:#eef4ff}
.badge{font-weight:600;text-transform:uppercase;font-size:.8em}
</style></head><body>
<h1>What the new toolpacks ask for beyond the old</h1>
<p><code>{{.Old}}</code> → <code>{{.New}}</code>: <strong id="summary">{{.Summary}}</strong></p>
{{if .Changes}}<table id="changes"><thead><tr><th>severity</th><th>tool</th><th>change</th><th>what</th></tr></thead><tbody>
{{range .Changes}}<tr class="{{.Level}}"><td class="badge">{{.Level}}</td><td><code>{{.Tool}}</code></td><td>{{.Kind}}</td><td class="what">{{.What}}</td></tr>
{{end}}</tbody></table>{{else}}<p>Nothing new.</p>{{end}}
</body></html>
`
