package mcp

import (
	"context"
	"encoding/json"
	"html"
	"maps"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/manifest"
)

// MCP Apps (the io.modelcontextprotocol/ui extension, as
// @modelcontextprotocol/ext-apps implements it). A tool whose manifest has
// ui hints ({"kind": "table", "rows": "/items"}) is offered with a view: a
// ui:// resource of HTML (text/html;profile=mcp-app) named in the tool's
// _meta.ui.resourceUri. A host that renders apps loads it in a sandboxed
// frame and hands it the call's result; the view shows it as the hints
// say (a table, key-value pairs, text, an image) instead of JSON. The
// view is self-contained (no script or style from anywhere else, so the
// resource declares no CSP domains) and speaks the extension's
// postMessage protocol itself: ui/initialize, then
// ui/notifications/initialized, then it renders each
// ui/notifications/tool-result. What it shows is set as text, never as
// markup: a tool's output cannot script the view.

// Keys and values of the MCP Apps extension.
const (
	appMIME        = "text/html;profile=mcp-app"
	appMetaKey     = "ui"             // _meta.ui.resourceUri
	appLegacyKey   = "ui/resourceUri" // the flat key earlier hosts read
	appURIPrefix   = "ui://agenthost/"
	appProtocolVer = "2026-01-26"
)

// appURI is the view of the tool with wire name name.
func appURI(name string) string { return appURIPrefix + name + ".html" }

// appMeta names t's view in its _meta, when it has ui hints.
func appMeta(name string, t *manifest.Tool, meta sdk.Meta) {
	if len(t.UI) == 0 {
		return
	}
	meta[appMetaKey] = map[string]any{"resourceUri": appURI(name)}
	meta[appLegacyKey] = appURI(name)
}

// syncApps makes the server's ui:// resources match the listed tools
// with ui hints (want: wire name → tool); the caller holds s.mu.
func (s *Server) syncApps(want map[string]*manifest.Tool) {
	views := map[string]*manifest.Tool{}
	for n, t := range want {
		if len(t.UI) > 0 {
			views[appURI(n)] = t
		}
	}
	var gone []string
	for uri := range s.apps {
		if _, ok := views[uri]; !ok {
			gone = append(gone, uri)
			delete(s.apps, uri)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveResources(gone...)
	}
	for _, uri := range slices.Sorted(maps.Keys(views)) {
		t := views[uri]
		page := appPage(t)
		if s.apps[uri] == page {
			continue
		}
		s.apps[uri] = page
		s.srv.AddResource(&sdk.Resource{URI: uri, Name: strings.TrimSuffix(strings.TrimPrefix(uri, appURIPrefix), ".html"),
			Title: t.DisplayName + " view", MIMEType: appMIME, Description: "shows a result of " + t.ToolID + " as " + t.UI["kind"]},
			func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
				return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: appMIME, Text: page}}}, nil
			})
	}
}

// appPage is the view of t: the page, its hints as JSON in a data
// attribute (escaped), and the script that renders a result by them.
func appPage(t *manifest.Tool) string {
	hints, _ := json.Marshal(t.UI)
	return `<!doctype html>
<html><head><meta charset="utf-8"><title>` + html.EscapeString(t.DisplayName) + `</title>
<style>body{font:14px system-ui,sans-serif;margin:8px}table{border-collapse:collapse}th,td{border:1px solid #bbb;padding:2px 6px;text-align:left;vertical-align:top}pre{white-space:pre-wrap}</style>
</head><body data-hints="` + html.EscapeString(string(hints)) + `"><div id="view">…</div>
<script>
"use strict";
const hints = JSON.parse(document.body.dataset.hints);
const view = document.getElementById("view");
let next = 1;
const pending = {};
function send(msg) { window.parent.postMessage(Object.assign({jsonrpc: "2.0"}, msg), "*"); }
function request(method, params) {
  const id = next++;
  send({id, method, params});
  return new Promise((resolve, reject) => { pending[id] = {resolve, reject}; });
}
// at resolves a JSON pointer (RFC 6901) in v; undefined when it does not.
function at(v, pointer) {
  if (!pointer) return v;
  for (const raw of pointer.split("/").slice(1)) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (v === null || typeof v !== "object" || !(key in v)) return undefined;
    v = v[key];
  }
  return v;
}
function cell(v) { return v === null || typeof v !== "object" ? String(v) : JSON.stringify(v); }
function el(tag, text) { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; return e; }
function table(rows) {
  const t = el("table");
  const cols = [];
  for (const r of rows) for (const k of Object.keys(r !== null && typeof r === "object" ? r : {value: r})) if (!cols.includes(k)) cols.push(k);
  const head = t.createTHead().insertRow();
  for (const c of cols) head.appendChild(el("th", c));
  const body = t.createTBody();
  for (const r of rows) {
    const row = body.insertRow();
    const o = r !== null && typeof r === "object" ? r : {value: r};
    for (const c of cols) row.appendChild(el("td", c in o ? cell(o[c]) : ""));
  }
  return t;
}
function render(result) {
  view.replaceChildren();
  if (result.isError) { view.appendChild(el("pre", (result.content || []).map(c => c.text || "").join("\n"))); return; }
  let out = result.structuredContent;
  if (out === undefined) { try { out = JSON.parse((result.content || [])[0].text); } catch { out = (result.content || [])[0]?.text; } }
  const kind = hints.kind;
  if (kind === "table") {
    const rows = at(out, hints.rows);
    if (Array.isArray(rows)) { view.appendChild(table(rows)); return; }
  }
  if (kind === "key-value") {
    const obj = at(out, hints.value || hints.rows);
    if (obj !== null && typeof obj === "object" && !Array.isArray(obj)) { view.appendChild(table(Object.entries(obj).map(([key, value]) => ({key, value: cell(value)})))); return; }
  }
  const v = at(out, hints.value || hints.text || hints.src);
  if (kind === "image" && typeof v === "string" && /^data:image\/(png|jpeg|gif|webp);base64,/.test(v)) { const i = el("img"); i.src = v; view.appendChild(i); return; }
  view.appendChild(el("pre", typeof v === "string" ? v : JSON.stringify(v === undefined ? out : v, null, 2)));
}
window.addEventListener("message", (ev) => {
  if (ev.source !== window.parent) return;
  const m = ev.data;
  if (!m || m.jsonrpc !== "2.0") return;
  if (m.id !== undefined && pending[m.id] && !m.method) {
    const p = pending[m.id]; delete pending[m.id];
    m.error ? p.reject(m.error) : p.resolve(m.result);
    return;
  }
  if (m.method === "ui/notifications/tool-result") render(m.params);
  else if (m.method === "ui/resource-teardown" && m.id !== undefined) send({id: m.id, result: {}});
  else if (m.method === "ping" && m.id !== undefined) send({id: m.id, result: {}});
});
request("ui/initialize", {appInfo: {name: "agenthost-view", version: "1"}, appCapabilities: {}, protocolVersion: "` + appProtocolVer + `"})
  .then(() => send({method: "ui/notifications/initialized", params: {}}))
  .catch((e) => { view.textContent = "the host refused the view: " + (e && e.message); });
</script></body></html>
`
}
