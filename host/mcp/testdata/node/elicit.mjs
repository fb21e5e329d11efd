// Drives approvals of an agenthost MCP server over the 2025-11-25 session
// revision with the official TypeScript SDK client (v1): the server asks
// during the call with elicitation/create, which this client answers.
//
// Usage: node elicit.mjs URL TOOL ARGS
// (ARGS as JSON). It prints what each scenario saw: allow (accept, allow
// once), deny (accept with decision deny), decline, and incapable (a
// client that did not declare the elicitation capability).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, tool, argsJSON] = process.argv.slice(2);
const args = JSON.parse(argsJSON);

async function scenario(answer) {
  const seen = [];
  const client = new Client({ name: "approver-v1", version: "1.0.0" },
    answer ? { capabilities: { elicitation: { form: {} } } } : {});
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      seen.push(request.params);
      return answer;
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  let out;
  try {
    out = { result: await client.callTool({ name: tool, arguments: args }), elicitations: seen };
  } catch (e) {
    out = { error: { code: e.code ?? null, message: e.message }, elicitations: seen };
  }
  await client.close();
  return out;
}

console.log(JSON.stringify({
  allow: await scenario({ action: "accept", content: { decision: "allow-once" } }),
  deny: await scenario({ action: "accept", content: { decision: "deny" } }),
  decline: await scenario({ action: "decline" }),
  incapable: await scenario(null),
}));
