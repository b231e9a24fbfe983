// Drives a Waypoint assistant with the real AG-UI client (@ag-ui/client, pinned in package-lock.json).
// The client checks the stream itself (event order, open and closed pairs, one RUN_FINISHED or
// RUN_ERROR) and throws on a stream that breaks the protocol; this script reports what each
// scenario saw as one JSON object on stdout, for tests/process/test_agui_client.py to judge.
//
//   node e2e/agui-client.mjs <base url> <api key> <assistant id> <scenario>

import { HttpAgent } from "@ag-ui/client";
import { randomUUID } from "node:crypto";

const [base, key, assistant, scenario] = process.argv.slice(2);

function agent(threadId) {
  return new HttpAgent({
    url: `${base}/v1/ag-ui/${assistant}`,
    headers: { Authorization: `Bearer ${key}` },
    threadId: threadId ?? `thread-${randomUUID()}`,
  });
}

// One run: every event the client accepted, in order, and how the run finished.
async function run(client, params = {}, { abortAfter } = {}) {
  const seen = [];
  let finished = null;
  let failed = null;
  await client.runAgent({ runId: randomUUID(), ...params }, {
    onEvent({ event }) {
      seen.push(event);
      if (abortAfter && abortAfter(event, seen)) client.abortRun();
    },
    onRunFinishedEvent(finish) {
      finished = { outcome: finish.outcome, interrupts: finish.interrupts ?? [] };
    },
    onRunErrorEvent({ event }) {
      failed = { code: event.code, message: event.message };
    },
  });
  return { types: seen.map((e) => e.type), events: seen, finished, failed };
}

function transcript(client) {
  return client.messages.map((m) => ({ id: m.id, role: m.role, content: m.content ?? null }));
}

function user(text) {
  return { id: randomUUID(), role: "user", content: text };
}

const scenarios = {
  async plain() {
    const client = agent();
    client.addMessage(user("hello there"));
    const first = await run(client);
    return { threadId: client.threadId, first, messages: transcript(client), state: client.state };
  },

  async streamed() {
    const client = agent();
    client.addMessage(user("tell me a story"));
    const first = await run(client);
    return { first, messages: transcript(client) };
  },

  async approval() {
    const client = agent();
    client.addMessage(user("refund please"));
    const paused = await run(client);
    const [interrupt] = paused.finished.interrupts;
    const call = client.state.pending_client_actions.find((c) => c.call_id === interrupt.toolCallId);
    const payload = { decision: "approve", reviewed: { tool: call.tool, arguments: call.arguments } };
    const resumed = await run(client, { resume: [{ interruptId: interrupt.id, status: "resolved", payload }] });
    return { paused, resumed, messages: transcript(client), state: client.state };
  },

  async frontendTool() {
    const client = agent();
    client.addMessage(user("when can you deliver?"));
    const paused = await run(client);
    // The frontend tool call is the one the stream started and gave no result.
    const answered = new Set(paused.events.filter((e) => e.type === "TOOL_CALL_RESULT").map((e) => e.toolCallId));
    const [toolCallId] = paused.events.filter((e) => e.type === "TOOL_CALL_START" && !answered.has(e.toolCallId)).map((e) => e.toolCallId);
    client.addMessage({ id: randomUUID(), role: "tool", toolCallId, content: JSON.stringify({ label: "2026-12-24" }) });
    const resumed = await run(client);
    return { paused, resumed, messages: transcript(client) };
  },

  async dropped() {
    const client = agent();
    client.addMessage(user("check slowly"));
    // The connection is dropped once the first slow action has started: the run goes on server-side.
    const cut = await run(client, {}, { abortAfter: (event) => event.type === "STEP_STARTED" && !event.stepName.startsWith("Model round") });
    const again = agent(client.threadId);
    again.setMessages(client.messages);
    const resumed = await run(again);
    return { threadId: client.threadId, cut, resumed, messages: transcript(again), state: again.state };
  },
};

try {
  const result = await scenarios[scenario]();
  process.stdout.write(JSON.stringify({ ok: true, ...result }) + "\n");
} catch (error) {
  process.stdout.write(JSON.stringify({ ok: false, error: String(error?.message ?? error) }) + "\n");
  process.exitCode = 1;
}
