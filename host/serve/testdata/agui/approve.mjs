// Drives approvals of `agenthost serve` with the official AG-UI client: the
// first run stops at a tool call that needs approval (RUN_FINISHED with an
// interrupt outcome); the next run resumes it with the decision as the
// resume payload (or cancels it), and the run goes on from the call.
//
// Usage: node approve.mjs BASE_URL TOKEN PROFILE THREAD ANSWER
// ANSWER is a decision (allow-once, allow, deny) sent as resolved, or
// "cancelled" (the interrupt abandoned). It prints both runs.
import { HttpAgent } from "@ag-ui/client";

const [base, token, profile, thread, answer] = process.argv.slice(2);
const agent = new HttpAgent({
  url: `${base}/v1/agents/${profile}/runs`,
  headers: { Authorization: `Bearer ${token}` },
  threadId: thread,
  initialMessages: [{ id: "u1", role: "user", content: "Digest this text." }],
});

async function run(runId, params) {
  const seen = { events: [], results: [], outcome: null, interrupts: [] };
  await agent.runAgent({ runId, ...params }, {
    onEvent({ event }) { seen.events.push(event.type); },
    onToolCallResultEvent({ event }) { seen.results.push({ toolCallId: event.toolCallId, content: event.content }); },
    onRunFinishedEvent(p) {
      seen.outcome = p.outcome;
      if (p.outcome === "interrupt") seen.interrupts = p.interrupts;
    },
  });
  return seen;
}

const first = await run("run-1", {});
const pending = agent.pendingInterrupts.map((i) => i.id);
const resume = agent.pendingInterrupts.map((i) => answer === "cancelled"
  ? { interruptId: i.id, status: "cancelled" }
  : { interruptId: i.id, status: "resolved", payload: { decision: answer, minutes: answer === "allow" ? 5 : undefined } });
let second;
try {
  second = await run("run-2", { resume });
} catch (e) {
  second = { error: e.message };
}
console.log(JSON.stringify({ first, pending, second, left: agent.pendingInterrupts.length }));
