// Drives an agenthost MCP server with the official TypeScript SDK v2
// client (@modelcontextprotocol/client, the 2026-07-28 revision): over
// Streamable HTTP (node client2.mjs NEGOTIATION http URL) or stdio (node
// client2.mjs NEGOTIATION stdio COMMAND ARG...), NEGOTIATION being the
// client's versionNegotiation mode: legacy (2025-11-25's initialize),
// auto (server/discover first) or 2026-07-28 (pinned). It prints what the
// client negotiated and saw.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [negotiation, mode, target, ...rest] = process.argv.slice(2);
const client = new Client({ name: "ts-v2", version: "1.0.0" }, {
  versionNegotiation: { mode: negotiation === "legacy" || negotiation === "auto" ? negotiation : { pin: negotiation } },
});
const transport = mode === "http"
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args: rest, stderr: "ignore" });
await client.connect(transport);
const list = await client.listTools();
const echo = await client.callTool({ name: "core__echo", arguments: { hello: "v2" } });
const failure = await client.callTool({ name: "text__stats", arguments: { txt: "misspelt" } });
let unknown;
try {
  await client.callTool({ name: "no__such", arguments: {} });
} catch (e) {
  unknown = { code: e.code, message: e.message };
}
console.log(JSON.stringify({
  version: client.getNegotiatedProtocolVersion?.() ?? null,
  server: client.getServerVersion?.() ?? null,
  tools: list.tools.map((t) => t.name),
  echo,
  failure,
  unknown,
}));
await client.close();
