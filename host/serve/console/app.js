// The agenthost console: plain JavaScript, no build step. The token comes
// from the form (or #token=… in the address) and stays in this tab only.
"use strict";
const state = { token: sessionStorage.getItem("agenthost-token") || "", tools: [] };

function params() { return new URLSearchParams(location.hash.slice(1)); }
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}
function status(msg) { document.getElementById("status").textContent = msg; }
async function api(method, path, body) {
  const res = await fetch(path, {
    method, headers: { Authorization: "Bearer " + state.token, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok && res.headers.get("Content-Type")?.startsWith("application/json")) {
    const err = await res.json();
    throw new Error(`${res.status} ${err.error?.code}: ${err.error?.message}`);
  }
  if (!res.ok) throw new Error(res.status + " " + res.statusText);
  return res;
}
// show shows a view and returns the promise of its data.
function show(view) {
  for (const s of document.querySelectorAll("main section")) s.hidden = s.id !== view;
  if (view === "catalogue") return loadCatalogue();
  if (view === "sessions") return loadProfiles();
  if (view === "audit") return loadAudit();
}

// Catalogue: each tool with what the policy granted, denied and flags.
async function loadCatalogue() {
  try {
    const [tools, audit] = await Promise.all([
      api("GET", "/v1/tools").then((r) => r.json()),
      api("GET", "/v1/audit").then((r) => r.json()),
    ]);
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
      const button = el("button", { "data-try": t.id }, "try it");
      button.onclick = () => tryIt(t);
      body.append(el("tr", { "data-tool": t.id },
        el("td", {}, el("code", {}, t.id), el("br"), t.description.split(". ")[0]),
        el("td", {}, t.kind),
        el("td", {}, granted.join("; ") || "-"),
        el("td", { class: "deny" }, (a.denials || []).map((d) => d.capability + " " + d.requested).join("; ") || "-"),
        el("td", { class: "risk" }, (a.risks || []).map((r) => r.flag).join("; ") || "-"),
        el("td", {}, button)));
    }
    status(`${tools.tools.length} tools`);
  } catch (e) { status(e.message); }
}

// Try-it: a form generated from the tool's parameter schema.
function tryIt(t) {
  document.getElementById("tryit").hidden = false;
  document.getElementById("tryit-id").textContent = t.id;
  const form = document.getElementById("tryit-form");
  form.replaceChildren();
  const props = t.parameters?.properties || {};
  const required = new Set(t.parameters?.required || []);
  for (const [name, s] of Object.entries(props)) {
    let input;
    if (Array.isArray(s.enum)) {
      input = el("select", { name });
      for (const v of s.enum) input.append(el("option", { value: JSON.stringify(v) }, String(v)));
    } else if (s.type === "boolean") {
      input = el("input", { name, type: "checkbox" });
    } else if (s.type === "object" || s.type === "array") {
      input = el("textarea", { name, rows: 3, cols: 50, placeholder: "JSON" });
    } else {
      input = el("input", { name, type: s.type === "integer" || s.type === "number" ? "number" : "text", size: 50 });
    }
    input.dataset.type = s.type || "";
    if (required.has(name)) input.required = true;
    form.append(el("div", {}, el("label", {}, `${name}${required.has(name) ? " *" : ""} `, input), " ", s.description || ""));
  }
  const go = el("button", {}, "Call");
  form.append(go);
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    const args = {};
    for (const input of form.querySelectorAll("[name]")) {
      const type = input.dataset.type;
      if (input.tagName === "SELECT") args[input.name] = JSON.parse(input.value);
      else if (type === "boolean") args[input.name] = input.checked;
      else if (input.value === "") continue;
      else if (type === "integer" || type === "number") args[input.name] = Number(input.value);
      else if (type === "object" || type === "array") args[input.name] = JSON.parse(input.value);
      else args[input.name] = input.value;
    }
    try {
      const env = await (await api("POST", `/v1/tools/${encodeURIComponent(t.id)}/call`, args)).json();
      document.getElementById("tryit-result").textContent = JSON.stringify(env, null, 2);
    } catch (e) { document.getElementById("tryit-result").textContent = e.message; }
  };
}

// Sessions: run a profile's agent and render the AG-UI stream live.
async function loadProfiles() {
  try {
    const r = await (await api("GET", "/v1/profiles")).json();
    const sel = document.getElementById("profile");
    sel.replaceChildren(...r.profiles.map((p) => el("option", { value: p.id }, p.name || p.id)));
  } catch (e) { status(e.message); }
}

// ownImage: an image of this server or carried in the result (a raster
// data: URL). One on another host is never loaded: it would tell that
// host who reads the result, and when (the CSP says the same).
function ownImage(src) {
  if (typeof src !== "string") return false;
  if (/^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]*$/.test(src)) return true;
  try { return new URL(src, location.href).origin === location.origin; } catch { return false; }
}

function renderUI(ui) {
  if (!ui) return null;
  const box = el("div", { class: "ui ui-" + ui.kind });
  if (ui.kind === "table" && Array.isArray(ui.rows)) {
    const cols = ui.columns || Object.keys(ui.rows[0] || {});
    const table = el("table", { class: "ui-table" }, el("thead", {}, el("tr", {}, ...cols.map((c) => el("th", {}, c)))));
    const body = el("tbody");
    for (const row of ui.rows) body.append(el("tr", {}, ...cols.map((c) => el("td", {}, typeof row[c] === "object" ? JSON.stringify(row[c]) : row[c] ?? ""))));
    table.append(body);
    box.append(table);
  } else if (ui.kind === "key-value" && ui.items && typeof ui.items === "object") {
    const dl = el("dl");
    for (const [k, v] of Object.entries(ui.items)) dl.append(el("dt", {}, k), el("dd", {}, typeof v === "object" ? JSON.stringify(v) : v));
    box.append(dl);
  } else if (ui.kind === "code") {
    box.append(el("pre", { class: "ui-code" }, typeof ui.text === "string" ? ui.text : JSON.stringify(ui.text, null, 2)));
  } else if (ui.kind === "image" && ownImage(ui.src)) {
    box.append(el("img", { src: ui.src, alt: ui.alt || "" }));
  } else {
    box.append(el("pre", {}, JSON.stringify(ui, null, 2)));
  }
  return box;
}

async function run(profile, thread, message) {
  const stream = document.getElementById("stream");
  stream.replaceChildren();
  const body = { threadId: thread || "console-" + Date.now(), runId: "console-run-" + Date.now(), messages: [{ id: "u1", role: "user", content: message }], tools: [], context: [], state: {}, forwardedProps: {} };
  try {
    const res = await api("POST", `/v1/agents/${encodeURIComponent(profile)}/runs`, body);
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
        for (const line of chunk.split("\n")) if (line.startsWith("data: ")) onEvent(stream, JSON.parse(line.slice(6)));
      }
    }
  } catch (e) { stream.append(el("div", { class: "event error" }, e.message)); }
}

function onEvent(stream, e) {
  switch (e.type) {
    case "TEXT_MESSAGE_CONTENT": stream.append(el("div", { class: "event answer", "data-event": e.type }, e.delta)); break;
    case "TOOL_CALL_START": stream.append(el("div", { class: "event", "data-event": e.type }, "calls ", el("code", {}, e.toolCallName))); break;
    case "TOOL_CALL_RESULT": {
      const box = el("div", { class: "event tool", "data-event": e.type }, el("code", {}, e.content));
      const ui = renderUI(e.ui_schema);
      if (ui) box.append(ui);
      stream.append(box);
      break;
    }
    case "RUN_FINISHED": stream.append(el("div", { class: "event", "data-event": e.type }, "finished: " + (e.result?.status || ""))); break;
    case "RUN_ERROR": stream.append(el("div", { class: "event error", "data-event": e.type }, e.message)); break;
  }
}

async function loadAudit() {
  try {
    const a = await (await api("GET", "/v1/audit")).json();
    const box = document.getElementById("audit-body");
    box.replaceChildren(el("p", {}, `${a.summary.tools} tools, ${a.summary.withRisks} with risk flags, ${a.summary.withDenials} with denials, ${a.summary.loadErrors} load errors`));
    for (const t of a.tools) {
      box.append(el("details", {}, el("summary", {}, t.id + " " + t.version + (t.risks.length ? " — " + t.risks.map((r) => r.flag).join(", ") : "")),
        el("pre", {}, JSON.stringify({ requested: t.files.requested, granted: t.files.granted, network: t.network, env: t.env, limits: t.limits, denials: t.denials }, null, 2))));
    }
  } catch (e) { status(e.message); }
}

document.getElementById("login").onsubmit = (ev) => {
  ev.preventDefault();
  state.token = document.getElementById("token").value.trim();
  sessionStorage.setItem("agenthost-token", state.token);
  show("catalogue");
};
for (const a of document.querySelectorAll("nav a")) a.onclick = (ev) => { ev.preventDefault(); show(a.dataset.view); };
document.getElementById("run-form").onsubmit = (ev) => {
  ev.preventDefault();
  run(document.getElementById("profile").value, document.getElementById("thread").value, document.getElementById("message").value);
};

// Deep links: #token=…&view=…&run=PROFILE&thread=…&message=… A run link
// fills in the run form and stops there: a run (the model's and the
// tools' work, on the user's token) starts only when the user clicks Run.
(async () => {
  const p = params();
  const form = document.getElementById("run-form");
  if (p.get("token")) { state.token = p.get("token"); sessionStorage.setItem("agenthost-token", state.token); }
  if (!state.token) { status("Enter a token."); form.dataset.ready = ""; return; }
  const view = p.get("view") || (p.get("run") ? "sessions" : "catalogue");
  if (p.get("run")) {
    document.getElementById("thread").value = p.get("thread") || "";
    document.getElementById("message").value = p.get("message") || "";
  }
  await show(view);
  if (p.get("run")) {
    document.getElementById("profile").value = p.get("run");
    status("Check the message, then click Run.");
  }
  form.dataset.ready = "";
})();
