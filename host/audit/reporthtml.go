package audit

import (
	"html/template"
	"io"
	"strings"
	"sync"
)

// FormatHTML renders a report (or a diff) as one self-contained page:
// inline style, no script, nothing fetched.
const FormatHTML = "html"

// writeHTML writes the report as one page a reviewer can open or attach.
func (r Report) writeHTML(w io.Writer) error {
	return reportPage().Execute(w, struct {
		Report
		Summary string
	}{r, r.Summary.String()})
}

// reportPage is parsed on first use, as diffPage is: parsing at package
// initialisation would cost every command of the CLI.
var reportPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"join":    func(xs []string) string { return strings.Join(xs, ", ") },
		"granted": granted,
	}).Parse(reportPageText))
})

const reportPageText = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>agenthost audit</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:2rem;color:#1b1b1b}
h1{font-size:1.3rem} h2{font-size:1.1rem;margin-top:2rem} table{border-collapse:collapse;width:100%;margin:.5rem 0}
th,td{border-bottom:1px solid #ddd;padding:.35rem .6rem;text-align:left;vertical-align:top}
code,td.v{font-family:ui-monospace,monospace;font-size:.9em;word-break:break-all}
.denied{background:#fde2e1}.risk{background:#fff4d6}
</style></head><body>
<h1>agenthost audit</h1>
<p id="summary">{{.Summary}}.</p>
{{if .Tools}}<table id="tools"><thead><tr><th>tool</th><th>version</th><th>handler</th><th>status</th><th>denials</th><th>risks</th></tr></thead><tbody>
{{range .Tools}}<tr{{if .Denied}} class="denied"{{end}}><td><a href="#{{.ID}}@{{.Version}}"><code>{{.ID}}</code></a></td><td>{{.Version}}</td><td>{{.Handler.String}}</td><td>{{if .Denied}}<strong>denied</strong>{{else}}granted{{end}}</td><td>{{len .Denials}}</td><td>{{len .Risks}}</td></tr>
{{end}}</tbody></table>{{end}}
{{range .Tools}}<h2 id="{{.ID}}@{{.Version}}"><code>{{.ID}}</code> {{.Version}}</h2>
<p>manifest <code>{{.Path}}</code>; {{.Handler.String}}{{if .Handler.Module}}, <code>{{.Handler.Module}}</code>{{end}}; digest {{if .Digest}}<code>{{.Digest}}</code>{{else}}none{{end}}; workspace <code>{{.Workspace}}</code>{{if .Denied}}; <strong>denied by policy</strong> (every call is PERMISSION_DENIED){{end}}</p>
<table><thead><tr><th>capability</th><th>requested</th><th>granted</th></tr></thead><tbody>
<tr><td>read</td><td class="v">{{join .Files.Requested.Read}}</td><td class="v">{{join .Files.Granted.Read}}</td></tr>
<tr><td>write</td><td class="v">{{join .Files.Requested.Write}}</td><td class="v">{{join .Files.Granted.Write}}</td></tr>
{{if or .Files.Requested.Mounts .Files.Granted.Mounts}}<tr><td>mounts</td><td class="v">{{join .Files.Requested.Mounts}}</td><td class="v">{{join .Files.Granted.Mounts}}</td></tr>{{end}}
<tr><td>network</td><td class="v">{{join .Network.Requested}}</td><td class="v">{{join .Network.Granted}}{{if .Network.AllowPrivate}} (private addresses allowed){{end}}</td></tr>
<tr><td>env</td><td class="v">{{join .Env.Requested}}</td><td class="v">{{join .Env.Granted}}</td></tr>
<tr><td>limits</td><td class="v">{{.Limits.Requested.String}}</td><td class="v">{{granted .Limits.Granted}}</td></tr>
</tbody></table>
{{if .Denials}}<p>Denials:</p><ul class="denials">{{range .Denials}}<li class="denied"><code>{{.Capability}}</code> <code>{{.Requested}}</code>: {{.Reason}}</li>{{end}}</ul>{{end}}
{{if .Risks}}<p>Risks:</p><ul class="risks">{{range .Risks}}<li class="risk"><strong>{{.Flag}}</strong>: {{.Detail}}</li>{{end}}</ul>{{end}}
{{if .SchemaRewrites}}<p>Schema rewritten for model providers:</p><ul>{{range .SchemaRewrites}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Calls}}<p>Calls: <code>{{join .Calls}}</code></p>{{end}}
{{if .History}}<p>History: {{.History.Calls}} calls, {{.History.Failures}} failed.</p>{{end}}
{{end}}
{{if .LoadErrors}}<h2>Load errors</h2><table id="load-errors"><thead><tr><th>manifest</th><th>tool</th><th>error</th></tr></thead><tbody>
{{range .LoadErrors}}<tr class="denied"><td><code>{{.Path}}</code></td><td>{{if .ToolID}}<code>{{.ToolID}}</code>{{else}}-{{end}}</td><td>{{.Error}}</td></tr>
{{end}}</tbody></table>{{end}}
{{if .Environment}}<h2>Isolation on this machine</h2><table><thead><tr><th>protection</th><th>available</th><th>detail</th></tr></thead><tbody>
{{range .Environment}}<tr><td>{{.Name}}</td><td>{{.Available}}</td><td>{{.Detail}}</td></tr>
{{end}}</tbody></table>{{end}}
</body></html>
`
