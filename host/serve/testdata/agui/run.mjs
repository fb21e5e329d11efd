// Drives `agenthost serve` with the official AG-UI client: an HttpAgent
// runs the profile's agent, then a second run continues the thread.
// Usage: node run.mjs BASE_URL TOKEN PROFILE THREAD
import { HttpAgent } from "@ag-ui/client";

const [base, token, profile, thread] = process.argv.slice(2);
const agent = new HttpAgent({
  url: `${base}/v1/agents/${profile}/runs`,
  headers: { Authorization: `Bearer ${token}` },
  threadId: thread,
  initialMessages: [{ id: "u1", role: "user", content: "Fingerprint this text." }],
});
const seen = [];
const results = [];
const outcome = await agent.runAgent({ runId: "run-1" }, {
  onEvent({ event }) { seen.push(event.type); },
  onToolCallResultEvent({ event }) { results.push({ toolCallId: event.toolCallId, content: event.content }); },
});
console.log(JSON.stringify({
  events: seen,
  results,
  result: outcome.result ?? null,
  messages: agent.messages.map((m) => ({ role: m.role, content: typeof m.content === "string" ? m.content : null, toolCalls: (m.toolCalls ?? []).map((c) => c.function.name) })),
}));
