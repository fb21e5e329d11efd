// Renders an agenthost tool's MCP App view in Chromium as an MCP Apps host
// does, with @modelcontextprotocol/ext-apps' own host side (AppBridge and
// PostMessageTransport): the official v2 client lists the tools, reads
// the view (ui:// resource) a tool names in _meta.ui.resourceUri and calls
// the tool; the view is loaded in a sandboxed frame and handed the input
// and the result; what it shows is printed as JSON.
// Usage: node apps.mjs MCP_URL TOOL ARGS_JSON BRIDGE_BUNDLE CHROMIUM
import { readFileSync } from "node:fs";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { chromium } from "playwright-core";

const [url, tool, argsJSON, bundlePath, executablePath] = process.argv.slice(2);
const args = JSON.parse(argsJSON);
const client = new Client({ name: "apps-host", version: "1.0.0" }, {
  versionNegotiation: { mode: { pin: "2026-07-28" } },
  capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } },
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const { tools } = await client.listTools();
const def = tools.find((t) => t.name === tool);
const uri = def?._meta?.ui?.resourceUri;
if (!uri) throw new Error(`${tool} names no view: ${JSON.stringify(def?._meta)}`);
const { contents } = await client.readResource({ uri });
const view = contents[0];
const result = await client.callTool({ name: tool, arguments: args });
await client.close();

const browser = await chromium.launch({
  executablePath,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.setContent(`<!doctype html><html><body><iframe id="app" sandbox="allow-scripts"></iframe></body></html>`);
  await page.addScriptTag({ content: readFileSync(bundlePath, "utf8") });
  const state = await page.evaluate(async ({ html, args, result }) => {
    const { AppBridge, PostMessageTransport } = globalThis.ExtAppsBridge;
    const iframe = document.getElementById("app");
    const bridge = new AppBridge(null, { name: "apps-host", version: "1.0.0" }, {});
    const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
    // The frame's window stays the same object across its navigation:
    // the bridge listens before the view's script sends ui/initialize.
    await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
    iframe.srcdoc = html;
    await initialized;
    await bridge.sendToolInput({ arguments: args });
    await bridge.sendToolResult(result);
    return { initialized: true };
  }, { html: view.text, args, result });
  const frame = page.frames().find((f) => f !== page.mainFrame());
  await frame.waitForSelector("#view table, #view pre, #view img", { timeout: 20000 });
  const shown = await frame.evaluate(() => ({
    headers: [...document.querySelectorAll("#view th")].map((e) => e.textContent),
    rows: [...document.querySelectorAll("#view tbody tr")].map((tr) => [...tr.children].map((td) => td.textContent)),
    pre: document.querySelector("#view pre")?.textContent ?? null,
    scripts: document.querySelectorAll("#view script").length,
  }));
  console.log(JSON.stringify({ uri, mimeType: view.mimeType, state, shown, errors }));
} finally {
  await browser.close();
}
