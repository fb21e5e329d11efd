// Drives approvals of an agenthost MCP server over 2026-07-28 with the
// official TypeScript SDK v2 client (@modelcontextprotocol/client), pinned
// to that revision over Streamable HTTP. A call of a tool that needs
// approval is answered input_required (an elicitation/create asking the
// user); the client fulfils it and retries with inputResponses and the
// requestState echoed.
//
// Usage: node approve.mjs URL TOOL ARGS OTHER_TOOL OTHER_ARGS EXPIRED_STATE
// (ARGS as JSON; EXPIRED_STATE a requestState minted by the test with an
// expiry in the past). It prints what each scenario saw:
//   allow: the SDK's own driver answers accept with allow-once;
//   decline: it answers decline;
//   manual: the first round by hand (allowInputRequired), then retries
//   carrying a tampered, a forged, an expired state, the state on another
//   tool and on other arguments, the right one, and the right one again.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, tool, argsJSON, otherTool, otherArgsJSON, expired] = process.argv.slice(2);
const args = JSON.parse(argsJSON);
const otherArgs = JSON.parse(otherArgsJSON);

async function connect(answer, seen) {
  const client = new Client({ name: "approver", version: "1.0.0" }, {
    versionNegotiation: { mode: { pin: "2026-07-28" } },
    capabilities: { elicitation: { form: {} } },
  });
  client.setRequestHandler("elicitation/create", async (request) => {
    seen.push(request.params);
    return answer;
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

async function attempt(client, params, options) {
  try {
    return { result: await client.callTool(params, options) };
  } catch (e) {
    return { error: { code: e.code ?? null, message: e.message, data: e.data ?? null } };
  }
}

const out = {};

// The SDK's driver: accept (allow once), then decline.
for (const [name, answer] of [
  ["allow", { action: "accept", content: { decision: "allow-once" } }],
  ["decline", { action: "decline" }],
]) {
  const seen = [];
  const client = await connect(answer, seen);
  out[name] = { ...(await attempt(client, { name: tool, arguments: args })), elicitations: seen };
  await client.close();
}

// By hand: the first round, then the retries.
const seen = [];
const client = await connect({ action: "accept", content: { decision: "allow-once" } }, seen);
const first = await client.callTool({ name: tool, arguments: args }, { allowInputRequired: true });
out.first = first;
const key = Object.keys(first.inputRequests ?? {})[0];
const accept = { [key]: { action: "accept", content: { decision: "allow-once" } } };
const state = first.requestState ?? "";
const flip = state.slice(0, -2) + (state.at(-2) === "A" ? "B" : "A") + state.at(-1);
const retry = (name, a, s) => attempt(client, { name, arguments: a, inputResponses: accept, requestState: s }, { allowInputRequired: true });
out.tampered = await retry(tool, args, flip);
out.forged = await retry(tool, args, Buffer.from(JSON.stringify({ tool, decision: "allow" })).toString("base64url"));
out.expired = await retry(tool, args, expired);
out.otherTool = await retry(otherTool, otherArgs, state);
out.otherArgs = await retry(tool, { ...args, extra: "smuggled" }, state);
out.right = await retry(tool, args, state);
out.again = await retry(tool, args, state);
await client.close();
console.log(JSON.stringify(out));
