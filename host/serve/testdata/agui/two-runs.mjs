// Drives `agenthost serve` with the official AG-UI client: two runs on
// one thread, the second carrying the whole conversation of the first.
// Prints every tool call ID the client saw and the messages it holds.
// Usage: node two-runs.mjs BASE_URL TOKEN PROFILE THREAD
import { HttpAgent } from "@ag-ui/client";

const [base, token, profile, thread] = process.argv.slice(2);
const agent = new HttpAgent({
  url: `${base}/v1/agents/${profile}/runs`,
  headers: { Authorization: `Bearer ${token}` },
  threadId: thread,
  initialMessages: [{ id: "u1", role: "user", content: "Fingerprint this text." }],
});
const runs = [];
for (const [i, ask] of [[1, null], [2, "And once more."]]) {
  if (ask) agent.addMessage({ id: `u${i}`, role: "user", content: ask });
  const seen = { events: [], toolCallIds: [], deltas: 0 };
  await agent.runAgent({ runId: `run-${i}` }, {
    onEvent({ event }) { seen.events.push(event.type); },
    onToolCallStartEvent({ event }) { seen.toolCallIds.push(event.toolCallId); },
    onTextMessageContentEvent() { seen.deltas++; },
  });
  runs.push(seen);
}
console.log(JSON.stringify({
  runs,
  messages: agent.messages.map((m) => ({
    role: m.role,
    toolCallId: m.toolCallId ?? null,
    toolCalls: (m.toolCalls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
  })),
}));
