// Drives code mode's MCP tools (run_code, search_tools) with the official
// TypeScript SDK client over Streamable HTTP: the typed API in run_code's
// description, a search, programs in both languages (one with a progress
// token), and each way a program goes wrong. Usage: node code.mjs URL
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const client = new Client({ name: "ts-code", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
const list = await client.listTools();
const runCode = list.tools.find((t) => t.name === "run_code");
const search = await client.callTool({ name: "search_tools", arguments: { query: "read a file", limit: 2 } });
let progress = 0;
const js = await client.callTool({
  name: "run_code",
  arguments: { code: "const a = await tools.fs.read({path: 'a.txt'});\nconst b = await call('fs__read', {path: 'b.txt'});\nreturn a.content + '+' + b.content" },
}, undefined, { onprogress: () => { progress++; } });
const starlark = await client.callTool({
  name: "run_code",
  arguments: { language: "starlark", code: "result = [tools.core.echo(n = i)['n'] for i in range(input)]", input: 3 },
});
const bad = {};
for (const [name, args] of Object.entries({
  syntax: { code: "let x = 1;\nreturn (1 +;" },
  throws: { code: "throw new Error('boom')" },
  loop: { code: "for (;;) {}" },
  huge: { code: "return 'x'.repeat(3 << 19)" },
  nested: { code: "return await call('run_code', {code: 'return 1'})" },
  starlarkLoop: { language: "starlark", code: "while True:\n    pass" },
  language: { code: "1", language: "cobol" },
})) {
  const r = await client.callTool({ name: "run_code", arguments: args });
  bad[name] = { isError: r.isError, code: r._meta?.["agenthost/error"]?.code, text: r.content[0].text };
}
console.log(JSON.stringify({
  tools: list.tools.map((t) => t.name),
  description: runCode?.description ?? "",
  search,
  js,
  progress,
  starlark,
  bad,
}));
await client.close();
