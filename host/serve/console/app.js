// The agenthost console: plain JavaScript, no build step, nothing from
// another origin. The token comes from the form (or #token=… in the
// address) and stays in this tab only. Everything shown is built with
// DOM nodes and text, never parsed as HTML: tool results, schemas and
// model text cannot run script.
"use strict";
const state = { token: sessionStorage.getItem("agenthost-token") || "", tools: [], view: "", thread: "", oldest: 0, jobs: JSON.parse(sessionStorage.getItem("agenthost-jobs") || "[]"), sessionsNext: "", running: null };

// Bounds that keep a huge result or history from freezing the tab: what
// lies beyond them is shown on request.
const MAX_ROWS = 200, MAX_CHILDREN = 200, MAX_HIGHLIGHT = 32 << 10, MAX_LINES = 2000, PAGE = 100;

function params() { return new URLSearchParams(location.hash.slice(1)); }
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v; else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}
const $ = (id) => document.getElementById(id);
function status(msg, bad) { const s = $("status"); s.textContent = msg; s.classList.toggle("bad", !!bad); }
function when(t) { const d = new Date(t); return isNaN(d) ? "" : d.toLocaleString(); }

// A 401 means the token this tab holds is no longer the server's: it
// restarted (a token printed at start is new each time) or the operator
// changed it. Say so plainly and ask for the new one.
class StaleToken extends Error {}
function staleToken() {
  const b = $("banner");
  b.textContent = "The server restarted or the token changed: paste the new token.";
  b.hidden = false;
  $("token").focus();
}
async function api(method, path, body, signal) {
  let res;
  try {
    res = await fetch(path, {
      method, signal, headers: { Authorization: "Bearer " + state.token, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new Error("the server does not answer (" + e.message + ")");
  }
  if (res.status === 401) { staleToken(); throw new StaleToken("the token is not valid on this server"); }
  if (!res.ok && res.headers.get("Content-Type")?.startsWith("application/json")) {
    const err = await res.json();
    throw new Error(`${res.status} ${err.error?.code}: ${err.error?.message}`);
  }
  if (!res.ok) throw new Error(res.status + " " + res.statusText);
  return res;
}
const getJSON = (path) => api("GET", path).then((r) => r.json());

// show shows a view and returns the promise of its data.
function show(view) {
  state.view = view;
  for (const s of document.querySelectorAll("main > section")) s.hidden = s.id !== view;
  for (const a of document.querySelectorAll("nav a")) {
    if (a.dataset.view === view) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  if (view === "catalogue") return loadCatalogue();
  if (view === "sessions") return Promise.all([loadProfiles(), loadSessions(false)]);
  if (view === "jobs") return loadJobs();
  if (view === "analytics") return loadAnalytics();
  if (view === "audit") return loadAudit();
  if (view === "approvals") return loadApprovals();
}

// Live status: readiness every few seconds, in a line of its own, so it
// never shows an old state nor hides a message; a server that stopped
// answering is shown with the time of the first failed check.
async function heartbeat() {
  const live = $("live");
  try {
    const r = await fetch("/readyz");
    const h = await r.json();
    state.downSince = "";
    live.textContent = `${r.ok ? "ready" : "not ready (" + (h.status || r.status) + ")"} · checked ${new Date().toLocaleTimeString()} ·`;
    live.classList.toggle("bad", !r.ok);
  } catch {
    state.downSince = state.downSince || new Date().toLocaleTimeString();
    live.textContent = `the server does not answer, since ${state.downSince} ·`;
    live.classList.add("bad");
  }
}

// Catalogue: each tool with what the policy granted, denied and flags.
async function loadCatalogue() {
  try {
    const [tools, audit] = await Promise.all([getJSON("/v1/tools"), getJSON("/v1/audit")]);
    const byId = Object.fromEntries(audit.tools.map((t) => [t.id, t]));
    state.tools = tools.tools;
    const body = document.querySelector("#tools tbody");
    body.replaceChildren();
    for (const t of tools.tools) {
      const a = byId[t.id] || {};
      const granted = [];
      if (a.files?.granted?.read?.length) granted.push("read " + a.files.granted.read.join(", "));
      if (a.files?.granted?.write?.length) granted.push("write " + a.files.granted.write.join(", "));
      if (a.network?.granted?.length) granted.push("net " + a.network.granted.join(", "));
      const button = el("button", { "data-try": t.id, type: "button" }, "try it");
      button.onclick = () => tryIt(t);
      body.append(el("tr", { "data-tool": t.id, "data-words": (t.id + " " + (t.tags || []).join(" ") + " " + t.description).toLowerCase() },
        el("td", {}, el("code", {}, t.id), el("br"), (t.description || "").split(". ")[0]),
        el("td", {}, t.kind),
        el("td", {}, granted.join("; ") || "-"),
        el("td", { class: "deny" }, (a.denials || []).map((d) => d.capability + " " + d.requested).join("; ") || "-"),
        el("td", { class: "risk" }, (a.risks || []).map((r) => r.flag).join("; ") || "-"),
        el("td", {}, button)));
    }
    filterTools();
    status(`${tools.tools.length} tools`);
  } catch (e) { status(e.message, true); }
}
function filterTools() {
  const q = $("tool-filter").value.trim().toLowerCase();
  for (const tr of document.querySelectorAll("#tools tbody tr")) tr.hidden = q !== "" && !tr.dataset.words.includes(q);
}

// --- Try-it: a form generated from the tool's parameter schema. Only
// the fields the person set are sent: a menu left at "(default)" and an
// empty field are absent from the arguments, so the tool's defaults
// apply, not the form's.
function typeOf(s) {
  if (Array.isArray(s.enum)) return "enum";
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== "null") : s.type;
  return t || (s.properties ? "object" : s.items ? "array" : "any");
}
function tryIt(t) {
  $("tryit").hidden = false;
  $("tryit-id").textContent = t.id;
  $("tryit-desc").textContent = t.description || "";
  const form = $("tryit-form");
  form.replaceChildren();
  $("tryit-result").replaceChildren();
  const props = t.parameters?.properties || {};
  const required = new Set(t.parameters?.required || []);
  for (const [name, s0] of Object.entries(props)) {
    const s = s0 && typeof s0 === "object" ? s0 : {};
    const type = typeOf(s);
    const id = "arg-" + name.replace(/[^A-Za-z0-9_-]/g, "_");
    const hasDefault = Object.prototype.hasOwnProperty.call(s, "default");
    const placeholder = hasDefault ? "default: " + JSON.stringify(s.default) : "";
    let input;
    if (type === "enum" || type === "boolean") {
      input = el("select", { id, name });
      input.append(el("option", { value: "" }, hasDefault ? `(default: ${JSON.stringify(s.default)})` : "(not set)"));
      for (const v of type === "enum" ? s.enum : [true, false]) input.append(el("option", { value: JSON.stringify(v) }, JSON.stringify(v)));
    } else if (type === "integer" || type === "number") {
      input = el("input", { id, name, type: "text", inputmode: "decimal", placeholder });
    } else if (type === "string") {
      input = el("textarea", { id, name, rows: 2, placeholder });
    } else {
      input = el("textarea", { id, name, rows: 4, placeholder: placeholder || (type === "array" ? "JSON array, e.g. [1, 2]" : "JSON, e.g. {\"key\": \"value\"}"), spellcheck: "false" });
    }
    input.dataset.type = type;
    const msg = el("span", { class: "msg", id: id + "-msg", "aria-live": "polite" });
    input.setAttribute("aria-describedby", id + "-msg " + id + "-hint");
    input.addEventListener("input", () => validateField(input, s, required.has(name), msg));
    input.addEventListener("change", () => validateField(input, s, required.has(name), msg));
    form.append(el("div", { class: "field" },
      el("label", { for: id }, name, required.has(name) ? " *" : "", el("span", { class: "muted" }, " " + type)),
      input, msg, el("span", { class: "hint", id: id + "-hint" }, s.description || "")));
  }
  const call = el("button", { type: "submit" }, "Call");
  const job = el("button", { type: "button", "data-async": "" }, "Run as a job");
  form.append(el("div", { class: "buttons" }, call, job));
  const submit = async (asJob) => {
    const args = collect(form, props, required);
    if (!args) return;
    const out = $("tryit-result");
    out.replaceChildren(el("p", { class: "muted" }, el("progress"), " calling ", t.id, " …"));
    try {
      const res = await api("POST", `/v1/tools/${encodeURIComponent(t.id)}/call${asJob ? "?async=true" : ""}`, args);
      const body = await res.json();
      if (res.status === 202) {
        rememberJob(body);
        out.replaceChildren(el("p", {}, "Job ", el("code", {}, body.id), " started: see Jobs."));
        return;
      }
      out.replaceChildren(renderEnvelope(body));
    } catch (e) { out.replaceChildren(el("p", { class: "fail" }, e.message)); }
    out.scrollIntoView({ block: "nearest" });
  };
  form.onsubmit = (ev) => { ev.preventDefault(); submit(false); };
  job.onclick = () => submit(true);
  const first = form.querySelector("[name]");
  if (first) first.focus(); else call.focus();
}

// parseField reads one input: {set:false} when the person left it, else
// {value} or {error}.
function parseField(input) {
  const type = input.dataset.type, v = input.value;
  if (v === "") return { set: false };
  if (input.tagName === "SELECT") return { set: true, value: JSON.parse(v) };
  if (type === "integer" || type === "number") {
    const n = Number(v.trim());
    if (v.trim() === "" || !Number.isFinite(n)) return { set: true, error: "not a number" };
    if (type === "integer" && !Number.isInteger(n)) return { set: true, error: "not a whole number" };
    return { set: true, value: n };
  }
  if (type === "string") return { set: true, value: v };
  try { return { set: true, value: JSON.parse(v) }; } catch (e) { return { set: true, error: "not JSON: " + e.message }; }
}

// schemaError says how value breaks the schema's simple rules, or "":
// the server checks everything again, this only saves a round trip.
function schemaError(value, s) {
  const type = typeOf(s);
  if (type === "array" && !Array.isArray(value)) return "must be a JSON array";
  if (type === "object" && (value === null || typeof value !== "object" || Array.isArray(value))) return "must be a JSON object";
  if (type === "string") {
    const n = [...value].length;
    if (typeof s.minLength === "number" && n < s.minLength) return `at least ${s.minLength} characters`;
    if (typeof s.maxLength === "number" && n > s.maxLength) return `at most ${s.maxLength} characters`;
    if (typeof s.pattern === "string") {
      let re = null;
      try { re = new RegExp(s.pattern, "u"); } catch { /* a pattern JavaScript cannot read: the server checks it */ }
      if (re && !re.test(value)) return "does not match " + s.pattern;
    }
  }
  if (typeof value === "number") {
    if (typeof s.minimum === "number" && value < s.minimum) return `at least ${s.minimum}`;
    if (typeof s.maximum === "number" && value > s.maximum) return `at most ${s.maximum}`;
    if (typeof s.exclusiveMinimum === "number" && value <= s.exclusiveMinimum) return `more than ${s.exclusiveMinimum}`;
    if (typeof s.exclusiveMaximum === "number" && value >= s.exclusiveMaximum) return `less than ${s.exclusiveMaximum}`;
  }
  if (Array.isArray(value)) {
    if (typeof s.minItems === "number" && value.length < s.minItems) return `at least ${s.minItems} items`;
    if (typeof s.maxItems === "number" && value.length > s.maxItems) return `at most ${s.maxItems} items`;
  }
  return "";
}
function validateField(input, s, required, msg) {
  const f = parseField(input);
  let err = f.error || "";
  if (!f.set && required) err = "required";
  if (!err && f.set) err = schemaError(f.value, s);
  msg.textContent = err;
  input.setAttribute("aria-invalid", err ? "true" : "false");
  return f.set && !err ? f : err ? null : { set: false };
}
function collect(form, props, required) {
  const args = {};
  let bad = null;
  for (const input of form.querySelectorAll("[name]")) {
    const f = validateField(input, props[input.name] || {}, required.has(input.name), document.getElementById(input.id + "-msg"));
    if (!f) { bad = bad || input; continue; }
    // defineProperty: a parameter named __proto__ is a key like any other.
    if (f.set) Object.defineProperty(args, input.name, { value: f.value, enumerable: true, writable: true, configurable: true });
  }
  if (bad) { bad.focus(); return null; }
  return args;
}

// renderEnvelope shows a call's envelope: status, then the output read
// as well as its shape allows, then the whole envelope on request.
function renderEnvelope(env) {
  const ok = env.status === "success";
  const box = el("div", { class: "envelope", "data-status": env.status || "" },
    el("p", { class: ok ? "ok" : "fail" }, ok ? "success" : "failure", env.error ? ` ${env.error.code}: ${env.error.message}` : "", typeof env.durationMs === "number" ? ` · ${env.durationMs.toFixed(1)} ms` : ""));
  if (ok) box.append(renderValue(env.output));
  box.append(el("details", {}, el("summary", {}, "the whole envelope"), jsonTree(env)));
  return box;
}
// renderValue picks a view from a value's shape: rows of objects as a
// table, an object as its plain fields (key-value) then its lists of
// rows (tables) then the rest (a tree), text as code or a diff.
const isRows = (x) => Array.isArray(x) && x.length > 0 && x.every((r) => r && typeof r === "object" && !Array.isArray(r));
function renderValue(v) {
  if (isRows(v)) return renderUI({ kind: "table", rows: v });
  if (v && typeof v === "object" && !Array.isArray(v)) {
    const entries = Object.entries(v);
    const plain = entries.filter(([, x]) => x === null || typeof x !== "object");
    const rows = entries.filter(([, x]) => isRows(x));
    const rest = entries.filter(([, x]) => x !== null && typeof x === "object" && !isRows(x));
    const box = el("div", { class: "shaped" });
    if (plain.length) box.append(renderUI({ kind: "key-value", items: Object.fromEntries(plain) }));
    for (const [k, x] of rows) box.append(el("h4", {}, k), renderUI({ kind: "table", rows: x }));
    if (rest.length) box.append(jsonTree(Object.fromEntries(rest)));
    return box;
  }
  if (typeof v === "string") return /^(--- |diff |@@ )/m.test(v) ? renderUI({ kind: "diff", text: v }) : renderUI({ kind: "code", text: v });
  return jsonTree(v);
}

// --- Renderers of ui_schema. Every one builds text nodes only.
// ownImage: an image of this server or carried in the result (a raster
// data: URL). One on another host is never loaded: it would tell that
// host who reads the result, and when (the CSP says the same).
function ownImage(src) {
  if (typeof src !== "string") return false;
  if (/^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]*$/.test(src)) return true;
  try {
    const u = new URL(src, location.href);
    return u.origin === location.origin && (u.protocol === "http:" || u.protocol === "https:");
  } catch { return false; }
}
function cell(v) { return v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v); }

// textOf is the text of a code, text, markdown or diff view: hints name
// it text, source, code or diff.
function textOf(ui) { return ui.text ?? ui.source ?? ui.code ?? ui.diff; }

function renderUI(ui) {
  if (!ui || typeof ui !== "object") return null;
  const kind = typeof ui.kind === "string" ? ui.kind : "";
  const box = el("div", { class: "ui", "data-kind": kind });
  if (kind === "table" && Array.isArray(ui.rows)) box.append(table(ui));
  else if (kind === "key-value" && ui.items && typeof ui.items === "object") {
    const dl = el("dl", { class: "ui-kv" });
    const entries = Array.isArray(ui.items) ? ui.items.map((x, i) => [x?.key ?? String(i), x?.value ?? x]) : Object.entries(ui.items);
    for (const [k, v] of entries.slice(0, MAX_ROWS)) dl.append(el("dt", {}, cell(k)), el("dd", {}, cell(v)));
    box.append(dl);
    if (entries.length > MAX_ROWS) box.append(el("p", { class: "ui-count" }, `${MAX_ROWS} of ${entries.length} pairs shown`));
  } else if (typeof textOf(ui) === "string" && (kind === "diff" || (kind === "code" && /^(diff|patch|udiff)$/i.test(String(ui.language || ""))))) box.append(diff(textOf(ui)));
  else if (kind === "code" && textOf(ui) !== undefined) box.append(code(typeof textOf(ui) === "string" ? textOf(ui) : JSON.stringify(textOf(ui), null, 2), ui.language));
  else if ((kind === "text" || kind === "markdown") && typeof textOf(ui) === "string") box.append(el("pre", { class: "ui-text" }, textOf(ui)));
  else if (kind === "image" && ownImage(ui.src ?? ui.source)) box.append(el("img", { src: ui.src ?? ui.source, alt: typeof ui.alt === "string" ? ui.alt : "" }));
  else box.append(jsonTree(ui));
  return box;
}

// table: sortable by any column (a click or Enter on its header), with
// the count of rows; the first MAX_ROWS are drawn, the rest on request.
function table(ui) {
  let rows = ui.rows.slice();
  let cols = Array.isArray(ui.columns) ? ui.columns.map(String) : [];
  if (!cols.length) {
    const seen = new Set();
    for (const r of rows.slice(0, MAX_ROWS)) if (r && typeof r === "object") for (const k of Object.keys(r)) seen.add(k);
    cols = [...seen];
  }
  const wrap = el("div");
  const count = el("p", { class: "ui-count" });
  const body = el("tbody");
  let shown = MAX_ROWS, sortCol = -1, dir = 1;
  const ths = cols.map((c, i) => {
    const b = el("button", { type: "button", title: "sort by " + c }, c);
    b.onclick = () => {
      dir = sortCol === i ? -dir : 1;
      sortCol = i;
      const num = rows.every((r) => typeof r?.[c] === "number" || r?.[c] == null);
      rows.sort((a, b) => {
        const x = a?.[c], y = b?.[c];
        if (x == null) return 1; if (y == null) return -1;
        return dir * (num ? x - y : cell(x).localeCompare(cell(y), undefined, { numeric: true }));
      });
      ths.forEach((th, j) => th.setAttribute("aria-sort", j === i ? (dir > 0 ? "ascending" : "descending") : "none"));
      draw();
    };
    return el("th", { "aria-sort": "none" }, b);
  });
  const more = el("button", { type: "button" }, "Show all rows");
  more.onclick = () => { shown = rows.length; draw(); };
  function draw() {
    body.replaceChildren();
    const frag = document.createDocumentFragment();
    for (const r of rows.slice(0, shown)) frag.append(el("tr", {}, ...cols.map((c) => el("td", {}, cell(r?.[c])))));
    body.append(frag);
    count.textContent = rows.length > shown ? `${shown} of ${rows.length} rows shown` : `${rows.length} row${rows.length === 1 ? "" : "s"}`;
    more.hidden = rows.length <= shown;
  }
  draw();
  wrap.append(count, el("table", { class: "ui-table" }, el("thead", {}, el("tr", {}, ...ths)), body), more);
  return wrap;
}

function diff(text) {
  const lines = text.split("\n");
  const pre = el("pre", { class: "diff" });
  const frag = document.createDocumentFragment();
  for (const l of lines.slice(0, MAX_LINES)) {
    const c = l.startsWith("+++") || l.startsWith("---") || l.startsWith("diff ") ? "file" : l.startsWith("@@") ? "hunk" : l[0] === "+" ? "add" : l[0] === "-" ? "del" : "";
    frag.append(el("span", { class: c || null }, l || " "));
  }
  pre.append(frag);
  if (lines.length > MAX_LINES) pre.append(el("span", { class: "muted" }, `… ${lines.length - MAX_LINES} more lines`));
  return pre;
}

// code: highlighted with a small tokenizer (strings, numbers, keywords,
// comments) over the first MAX_HIGHLIGHT characters; the rest as text.
// Every token is bounded in length, so no input makes the scan
// quadratic (an unclosed quote or comment is tried from each start).
const TOKENS = /("(?:[^"\\\n]|\\.){0,1000}"|'(?:[^'\\\n]|\\.){0,1000}'|`(?:[^`\\]|\\.){0,1000}`)|(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]{0,1000}?\*\/)|\b(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\b|\b(function|return|if|else|for|while|const|let|var|def|class|import|from|package|func|type|struct|true|false|null|nil|None|True|False|select|where|and|or|not|in|new|async|await)\b/g;
function code(text, language) {
  const pre = el("pre", { class: "ui-code", "data-language": typeof language === "string" ? language : null });
  const head = text.slice(0, MAX_HIGHLIGHT);
  const frag = document.createDocumentFragment();
  let last = 0;
  for (const m of head.matchAll(TOKENS)) {
    if (m.index > last) frag.append(head.slice(last, m.index));
    const cls = m[1] ? "tok-str" : m[2] ? "tok-com" : m[3] ? "tok-num" : "tok-kw";
    frag.append(el("span", { class: cls }, m[0]));
    last = m.index + m[0].length;
  }
  frag.append(head.slice(last));
  if (text.length > MAX_HIGHLIGHT) frag.append(text.slice(MAX_HIGHLIGHT));
  pre.append(frag);
  return pre;
}

// jsonTree: a collapsible tree; a node's children are built when it is
// opened, so a result of megabytes costs nothing until it is read.
function jsonTree(v) {
  const root = el("div", { class: "tree" });
  root.append(node(null, v, true));
  return root;
}
function node(key, v, open) {
  const label = key === null ? [] : [el("span", { class: "key" }, JSON.stringify(key)), ": "];
  if (v === null || typeof v !== "object") return el("div", { class: "leaf" }, ...label, JSON.stringify(v) ?? "undefined");
  const entries = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
  const d = el("details", {}, el("summary", {}, ...label, Array.isArray(v) ? `[${entries.length}]` : `{${entries.length}}`));
  let built = false;
  const build = () => {
    if (built) return;
    built = true;
    let n = 0;
    const add = () => {
      const frag = document.createDocumentFragment();
      for (const [k, x] of entries.slice(n, n + MAX_CHILDREN)) frag.append(node(Array.isArray(v) ? null : k, x, false));
      n += MAX_CHILDREN;
      d.append(frag);
      if (n < entries.length) {
        const more = el("button", { type: "button" }, `${entries.length - n} more`);
        more.onclick = () => { more.remove(); add(); };
        d.append(more);
      }
    };
    add();
  };
  d.addEventListener("toggle", () => d.open && build());
  if (open) { d.open = true; build(); }
  return d;
}

// --- Sessions: the list, a thread's history (paged from the newest),
// and runs continued in place.
async function loadProfiles() {
  try {
    const r = await getJSON("/v1/profiles");
    const sel = $("profile");
    const cur = sel.value;
    sel.replaceChildren(...r.profiles.map((p) => el("option", { value: p.id }, p.name || p.id)));
    if (cur) sel.value = cur;
  } catch (e) { status(e.message, true); }
}
async function loadSessions(more) {
  try {
    const q = new URLSearchParams({ limit: "50" });
    if (more && state.sessionsNext) q.set("cursor", state.sessionsNext);
    const page = await getJSON("/v1/sessions?" + q);
    const list = $("session-list");
    if (!more) list.replaceChildren();
    for (const s of page.sessions) {
      const b = el("button", { type: "button", "data-session": s.id, "aria-current": s.id === state.thread ? "true" : null },
        el("span", { class: "first" }, s.firstMessage || "(no message)"),
        el("span", { class: "meta" }, `${s.profile} · ${s.messages} messages · ${when(s.lastActivity)}`));
      b.onclick = () => openThread(s.id, s.profile);
      list.append(el("li", {}, b));
    }
    state.sessionsNext = page.next || "";
    $("more-sessions").hidden = !page.next;
  } catch (e) { status(e.message, true); }
}
function setThread(id) {
  state.thread = id;
  $("thread-id").textContent = id || "new";
  $("thread").value = id || "";
  $("copy-thread").hidden = !id;
  for (const b of document.querySelectorAll("#session-list button")) b.setAttribute("aria-current", b.dataset.session === id ? "true" : "false");
}
async function openThread(id, profile) {
  setThread(id);
  if (profile) $("profile").value = profile;
  $("history").replaceChildren();
  $("stream").replaceChildren();
  state.oldest = 0;
  await loadOlder();
  $("message").focus();
}
// loadOlder puts the page before the oldest message shown on top, and
// keeps the reader's place.
async function loadOlder() {
  const id = state.thread;
  try {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (state.oldest) q.set("before", String(state.oldest));
    const page = await getJSON(`/v1/sessions/${encodeURIComponent(id)}/messages?` + q);
    if (id !== state.thread) return;
    const h = $("history");
    const frag = document.createDocumentFragment();
    for (const m of page.messages) frag.append(...historyItem(m));
    const before = document.documentElement.scrollHeight;
    h.prepend(frag);
    if (state.oldest) window.scrollBy(0, document.documentElement.scrollHeight - before);
    if (page.messages.length) state.oldest = page.messages[0].seq;
    $("older").hidden = !page.more;
    h.dataset.loaded = String(h.querySelectorAll("[data-seq]").length);
  } catch (e) { status(e.message, true); }
}
// historyItem renders a stored message as the live stream showed it.
function historyItem(m) {
  const seq = { "data-seq": m.seq };
  if (m.role === "user") {
    const out = [el("div", { class: "event user", ...seq }, m.content)];
    if (m.run === "interrupted") out.push(el("div", { class: "event interrupted", "data-run": "interrupted" }, "This run ended without an answer: it was stopped, failed, or the server restarted."));
    if (m.run === "running") out.push(el("div", { class: "event", "data-run": "running" }, "This run is still going."));
    return out;
  }
  if (m.role === "assistant") {
    const calls = Array.isArray(m.metadata?.tool_calls) ? m.metadata.tool_calls : [];
    const out = [];
    if (m.content) out.push(el("div", { class: "event answer", ...seq }, m.content));
    for (const c of calls) out.push(el("div", { class: "event", ...(m.content ? {} : seq) }, "calls ", el("code", {}, c.name || "")));
    return out.length ? out : [el("div", { class: "event", ...seq }, "(empty turn)")];
  }
  if (m.role === "tool") return [toolResult(m.tool_agent_output?.tool_name || "", m.content, m.ui_schema, seq)];
  return [el("div", { class: "event", ...seq }, m.role + ": " + m.content)];
}
function toolResult(name, content, ui, extra) {
  const box = el("div", { class: "event tool", ...(extra || {}) });
  if (name) box.append(el("div", { class: "muted" }, "result of ", el("code", {}, name)));
  const view = renderUI(ui);
  if (view) box.append(view, el("details", {}, el("summary", {}, "the text the model read"), el("pre", {}, content ?? "")));
  else box.append(el("pre", { class: "raw" }, content ?? ""));
  return box;
}

async function run(profile, thread, message) {
  const stream = $("stream");
  // The previous run joins the history, so the thread reads in order.
  $("history").append(...stream.childNodes);
  if (!thread) thread = "console-" + crypto.randomUUID();
  setThread(thread);
  stream.append(el("div", { class: "event user" }, message));
  const ctl = new AbortController();
  state.running = ctl;
  const started = Date.now();
  let calls = 0;
  const prog = $("progress");
  prog.hidden = false;
  const tick = () => { $("progress-text").textContent = `running · ${Math.round((Date.now() - started) / 1000)} s · ${calls} tool call${calls === 1 ? "" : "s"}`; };
  tick();
  const timer = setInterval(tick, 1000);
  const body = { threadId: thread, runId: "console-run-" + crypto.randomUUID(), messages: [{ id: "u-" + crypto.randomUUID(), role: "user", content: message }], tools: [], context: [], state: {}, forwardedProps: {} };
  const texts = new Map();
  try {
    const res = await api("POST", `/v1/agents/${encodeURIComponent(profile)}/runs`, body, ctl.signal);
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const chunk = buf.slice(0, i);
        buf = buf.slice(i + 2);
        for (const line of chunk.split("\n")) {
          if (!line.startsWith("data: ")) continue;
          const e = JSON.parse(line.slice(6));
          if (e.type === "TOOL_CALL_START") calls++;
          onEvent(stream, e, texts);
        }
      }
    }
  } catch (e) {
    stream.append(el("div", { class: "event error" }, e.name === "AbortError" ? "stopped" : e.message));
  } finally {
    clearInterval(timer);
    prog.hidden = true;
    state.running = null;
    loadSessions(false);
  }
}

// onEvent draws one AG-UI event; text deltas go into their message as
// they arrive. texts holds the run's open messages by ID, and its calls'
// tool names by "call:" and the call ID.
function onEvent(stream, e, texts) {
  switch (e.type) {
    case "TEXT_MESSAGE_START": {
      const d = el("div", { class: "event answer", "data-event": e.type, "data-message": e.messageId || "" });
      texts.set(e.messageId, d);
      stream.append(d);
      break;
    }
    case "TEXT_MESSAGE_CONTENT": {
      let d = texts.get(e.messageId);
      if (!d) { d = el("div", { class: "event answer", "data-message": e.messageId || "" }); texts.set(e.messageId, d); stream.append(d); }
      d.dataset.deltas = String(Number(d.dataset.deltas || 0) + 1);
      d.append(e.delta || "");
      break;
    }
    case "TOOL_CALL_START":
      texts.set("call:" + e.toolCallId, e.toolCallName || "");
      stream.append(el("div", { class: "event", "data-event": e.type }, "calls ", el("code", {}, e.toolCallName || "")));
      break;
    case "TOOL_CALL_RESULT": {
      const box = toolResult(texts.get("call:" + e.toolCallId) || "", e.content, e.ui_schema);
      box.dataset.event = e.type;
      stream.append(box);
      break;
    }
    case "RUN_FINISHED": stream.append(el("div", { class: "event", "data-event": e.type }, "finished: " + (e.result?.status || ""))); break;
    case "RUN_ERROR": stream.append(el("div", { class: "event error", "data-event": e.type }, e.message || "")); break;
  }
}

// --- Jobs: the ones started here (and any looked up), with their state
// and a cancel button while they run.
function rememberJob(j) {
  if (!state.jobs.includes(j.id)) state.jobs.unshift(j.id);
  state.jobs = state.jobs.slice(0, 100);
  sessionStorage.setItem("agenthost-jobs", JSON.stringify(state.jobs));
}
let jobTimer = 0;
// listedJobs is the tenant's latest jobs, newest first.
async function listedJobs() {
  const all = [];
  let after = "";
  // Oldest first, a page at a time: read up to 10 pages, keep the end.
  for (let i = 0; i < 10; i++) {
    const page = await getJSON("/v1/jobs" + (after ? "?after=" + encodeURIComponent(after) : ""));
    all.push(...page.jobs);
    if (!page.next) break;
    after = page.next;
  }
  return all.slice(-100).reverse();
}
async function loadJobs() {
  clearTimeout(jobTimer);
  const body = document.querySelector("#job-table tbody");
  let listed;
  try { listed = await listedJobs(); } catch (e) { status(e.message, true); return; }
  const jobs = [...listed];
  const known = new Set(jobs.map((j) => j.id));
  for (const id of state.jobs) {
    if (known.has(id)) continue;
    try { jobs.push(await getJSON(`/v1/jobs/${encodeURIComponent(id)}`)); } catch (e) {
      if (e instanceof StaleToken) return;
      jobs.push({ id, missing: e.message });
    }
  }
  jobs.sort((a, b) => String(b.created || "").localeCompare(String(a.created || "")));
  const rows = [];
  let live = false;
  for (const j of jobs) {
    const id = j.id;
    if (j.missing) {
      rows.push(el("tr", { "data-job": id }, el("td", {}, el("code", {}, id)), el("td", { colspan: 5, class: "muted" }, j.missing)));
      continue;
    }
    const ended = ["done", "interrupted"].includes(j.status) || !!j.result;
    live = live || !ended;
    const cancel = el("button", { type: "button", "data-cancel": id, hidden: ended }, "Cancel");
    cancel.onclick = async () => {
      cancel.disabled = true;
      try { await api("DELETE", `/v1/jobs/${encodeURIComponent(id)}`); } catch (e) { status(e.message, true); }
      loadJobs();
    };
    const res = j.result ? (j.result.status === "success" ? "success" : `${j.result.error?.code || "failure"}: ${j.result.error?.message || ""}`) : j.error ? `${j.error.code}: ${j.error.message}` : "";
    rows.push(el("tr", { "data-job": id, "data-state": j.status },
      el("td", {}, el("code", {}, id)), el("td", {}, el("code", {}, j.tool || "")), el("td", {}, j.status || ""),
      el("td", {}, when(j.updated)), el("td", {}, res), el("td", {}, cancel)));
  }
  body.replaceChildren(...rows);
  if (!rows.length) body.append(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No jobs yet: start one with \"Run as a job\" in a try-it form, or look one up by its ID.")));
  if (live && state.view === "jobs") jobTimer = setTimeout(loadJobs, 1500);
}

async function loadAnalytics() {
  try {
    const a = await getJSON("/v1/analytics");
    const box = $("analytics-body");
    const ms = (v) => (typeof v === "number" ? v.toFixed(1) + " ms" : "-");
    const body = el("tbody");
    for (const t of a.tools) {
      const codes = Object.entries(t.failuresByCode || {}).map(([c, n]) => `${c} ${n}`).join(", ");
      const last = t.lastFailures.length ? el("details", {}, el("summary", {}, `${t.lastFailures.length} latest`),
        ...t.lastFailures.map((f) => el("div", { class: "event error" }, el("div", { class: "muted" }, `${when(f.time)} · ${f.code}${f.session ? " · session " + f.session : ""}${f.job ? " · job " + f.job : ""}`), f.observation))) : "-";
      body.append(el("tr", { "data-tool": t.tool }, el("td", {}, el("code", {}, t.tool)), el("td", {}, t.calls), el("td", { class: t.failures ? "fail" : null }, t.failures),
        el("td", {}, codes || "-"), el("td", {}, ms(t.p50Ms)), el("td", {}, ms(t.p95Ms)), el("td", {}, last)));
    }
    box.replaceChildren(el("p", { class: "muted" }, `The latest ${a.window} calls of agent runs and jobs.`),
      a.tools.length ? el("table", { id: "analytics-table" }, el("thead", {}, el("tr", {}, ...["tool", "calls", "failures", "by code", "p50", "p95", "last failures"].map((h) => el("th", {}, h)))), body)
        : el("p", {}, "No calls yet."));
  } catch (e) { status(e.message, true); }
}

async function loadAudit() {
  try {
    const a = await getJSON("/v1/audit");
    const box = $("audit-body");
    box.replaceChildren(el("p", {}, `${a.summary.tools} tools, ${a.summary.withRisks} with risk flags, ${a.summary.withDenials} with denials, ${a.summary.loadErrors} load errors`));
    for (const t of a.tools) {
      const granted = [...(t.files?.granted?.read || []).map((p) => "read " + p), ...(t.files?.granted?.write || []).map((p) => "write " + p), ...(t.network?.granted || []).map((h) => "net " + h)];
      box.append(el("details", { "data-tool": t.id }, el("summary", {}, t.id + " " + t.version + (t.risks.length ? " — " + t.risks.map((r) => r.flag).join(", ") : "")),
        el("p", {}, "granted: ", granted.join("; ") || "nothing beyond its own memory"),
        t.risks.length ? el("ul", { class: "risk" }, ...t.risks.map((r) => el("li", {}, r.flag + (r.detail ? ": " + r.detail : "")))) : null,
        jsonTree({ requested: t.files.requested, granted: t.files.granted, network: t.network, env: t.env, limits: t.limits, denials: t.denials })));
    }
  } catch (e) { status(e.message, true); }
}

$("login").onsubmit = (ev) => {
  ev.preventDefault();
  state.token = $("token").value.trim();
  $("token").value = "";
  sessionStorage.setItem("agenthost-token", state.token);
  $("banner").hidden = true;
  show(state.view || "catalogue");
};
for (const a of document.querySelectorAll("nav a")) a.onclick = (ev) => { ev.preventDefault(); show(a.dataset.view); };
$("tool-filter").oninput = filterTools;
$("run-form").onsubmit = (ev) => {
  ev.preventDefault();
  if (state.running) return;
  run($("profile").value, $("thread").value.trim(), $("message").value);
  $("message").value = "";
};
// Enter sends, Shift+Enter is a new line (as in chat clients).
$("message").addEventListener("keydown", (ev) => { if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); $("run-form").requestSubmit(); } });
$("stop").onclick = () => state.running?.abort();
$("new-thread").onclick = () => { setThread(""); $("history").replaceChildren(); $("stream").replaceChildren(); $("older").hidden = true; $("message").focus(); };
$("older").onclick = loadOlder;
$("more-sessions").onclick = () => loadSessions(true);
$("copy-thread").onclick = async () => {
  try { await navigator.clipboard.writeText(state.thread); status("thread ID copied"); } catch {
    // Clipboard access can be refused (no focus, no permission): select
    // the ID so that Ctrl+C copies it.
    const r = document.createRange(); r.selectNodeContents($("thread-id"));
    const s = getSelection(); s.removeAllRanges(); s.addRange(r);
    status("thread ID selected: press Ctrl+C");
  }
};
$("job-lookup").onsubmit = (ev) => { ev.preventDefault(); const id = $("job-id").value.trim(); if (id) { rememberJob({ id }); loadJobs(); } };

// A new address with #token=… in this tab (the one serve printed after a
// restart) takes the new token at once.
window.addEventListener("hashchange", () => {
  const p = params();
  if (!p.get("token")) return;
  state.token = p.get("token");
  sessionStorage.setItem("agenthost-token", state.token);
  p.delete("token");
  history.replaceState(null, "", location.pathname + location.search + (p.toString() ? "#" + p : ""));
  $("banner").hidden = true;
  show(p.get("view") || state.view || "catalogue");
});

// Deep links: #token=…&view=…&run=PROFILE&thread=…&message=… A run link
// fills in the run form and stops there: a run (the model's and the
// tools' work, on the user's token) starts only when the user clicks Run.
(async () => {
  const p = params();
  const form = $("run-form");
  if (p.get("token")) {
    state.token = p.get("token");
    sessionStorage.setItem("agenthost-token", state.token);
    // The token leaves the address bar (and what a screen share shows).
    p.delete("token");
    history.replaceState(null, "", location.pathname + location.search + (p.toString() ? "#" + p : ""));
  }
  heartbeat();
  setInterval(heartbeat, 5000);
  if (!state.token) { status("Paste the token serve printed (or open the address it printed)."); $("token").focus(); form.dataset.ready = ""; return; }
  const view = p.get("view") || (p.get("run") ? "sessions" : "catalogue");
  if (p.get("run")) {
    $("message").value = p.get("message") || "";
  }
  await show(view);
  if (p.get("thread")) { $("profile").value = p.get("run") || $("profile").value; await openThread(p.get("thread"), p.get("run")); }
  if (p.get("run")) {
    $("profile").value = p.get("run");
    $("message").value = p.get("message") || "";
    status("Check the message, then click Run.");
  }
  form.dataset.ready = "";
})();

// --- Approvals: the calls waiting for a person's decision, with what
// they would do (arguments, grant) and why they wait (risks). The list
// refreshes while the view is open; the first decision wins, and a late
// one is told what it was.
async function loadApprovals() {
  clearTimeout(state.approvalsTimer);
  try {
    const list = await getJSON("/v1/approvals");
    const body = document.querySelector("#approval-table tbody");
    const shown = new Set([...body.querySelectorAll("tr[data-approval]")].map((tr) => tr.dataset.approval));
    const now = new Set(list.approvals.map((a) => a.id));
    // Rebuild only when the set changed: a row being read stays put.
    if (!body.children.length || shown.size !== now.size || [...now].some((id) => !shown.has(id))) {
      body.replaceChildren(...list.approvals.slice(0, MAX_ROWS).map(approvalRow));
      if (!list.approvals.length) body.append(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No call is waiting.")));
    }
    if (state.view === "approvals") status(`${list.approvals.length} waiting`);
  } catch (e) { status(e.message, true); }
  if (state.view === "approvals") state.approvalsTimer = setTimeout(loadApprovals, 2000);
}
function approvalRow(a) {
  const g = a.grant || {};
  const grant = [["read", g.read], ["write", g.write], ["hosts", g.hosts], ["env", g.env], ["credentials", g.credentials]]
    .filter(([, v]) => v && v.length).map(([k, v]) => k + " " + v.join(", "));
  const decide = async (decision) => {
    const body = { decision };
    if (decision === "allow") body.minutes = Number($("approve-minutes").value) || 15;
    for (const b of tr.querySelectorAll("button")) b.disabled = true;
    try {
      const res = await fetch("/v1/approvals/" + encodeURIComponent(a.id), { method: "POST", headers: { Authorization: "Bearer " + state.token, "Content-Type": "application/json" }, body: JSON.stringify(body) });
      if (res.status === 401) { staleToken(); return; }
      const out = await res.json();
      const said = $("approval-result");
      said.classList.toggle("bad", !res.ok);
      if (res.status === 409) said.textContent = `${a.tool}: already decided: ${out.approval.decision} by ${out.approval.by || "nobody"}`;
      else if (!res.ok) said.textContent = `${res.status} ${out.error?.code}: ${out.error?.message}`;
      else said.textContent = `${a.tool}: ${out.approval.decision} (${out.approval.by})`;
    } catch (e) { status(e.message, true); }
    tr.remove();
    loadApprovals();
  };
  const button = (label, decision) => { const b = el("button", { type: "button", "data-decision": decision }, label); b.onclick = () => decide(decision); return b; };
  const tr = el("tr", { "data-approval": a.id },
    el("td", {}, el("code", {}, a.tool), el("br"), el("span", { class: "muted" }, (a.tenant || "") + " · " + when(a.created))),
    el("td", { class: "args" }, jsonTree(a.arguments)),
    el("td", {}, grant.join("; ") || "nothing beyond its own memory", g.timeoutMs ? el("br") : null, g.timeoutMs ? `timeout ${g.timeoutMs} ms` : null),
    el("td", { class: "risk" }, (a.risks || []).join(", ") || "the tool itself"),
    el("td", {}, when(a.expires)),
    el("td", { class: "buttons" }, button("Allow once", "allow-once"), " ", button("Allow for minutes", "allow"), " ", button("Deny", "deny")));
  return tr;
}
