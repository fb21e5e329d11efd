// Drives an agenthost MCP server with the official TypeScript SDK client
// over Streamable HTTP: list, call, a failing call, a progress token, and
// a task-augmented call through the SDK's (experimental) task API.
// Usage: node client.mjs URL
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const client = new Client({ name: "ts-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
const list = await client.listTools();
const stats = list.tools.find((t) => t.name === "text__stats");
const echo = await client.callTool({ name: "core__echo", arguments: { hello: "ts" } });
const failure = await client.callTool({ name: "text__stats", arguments: { txt: "misspelt" } });
let progress = 0;
await client.callTool({ name: "core__echo", arguments: { p: 1 } }, undefined, { onprogress: () => { progress++; } });
const task = [];
for await (const m of client.experimental.tasks.callToolStream({ name: "core__echo", arguments: { via: "task" } }, undefined, { task: { ttl: 60000 } })) {
  task.push(m.type === "result" ? { type: m.type, result: m.result } : { type: m.type, status: m.task?.status, error: m.error?.message });
}
const tasks = await client.experimental.tasks.listTasks();
console.log(JSON.stringify({
  tools: list.tools.map((t) => t.name),
  annotated: { annotations: stats.annotations, _meta: stats._meta, outputSchema: stats.outputSchema ? true : false },
  echo,
  failure,
  progress,
  task,
  listed: tasks.tasks.length,
}));
await client.close();
