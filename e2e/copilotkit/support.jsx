// The assistant's client tool, approvals and questions in a CopilotKit (v2) page. docs/ag-ui.md
// shows this file as it is; e2e/test_copilotkit.py builds it into a page and drives it.
import { UseAgentUpdate, useAgent, useCopilotKit, useFrontendTool, useInterrupt } from "@copilotkit/react-core/v2";
import { useEffect, useState } from "react";
import { z } from "zod";

// The thread is the Waypoint conversation: keep its id, and a reload continues the conversation.
const KEPT = localStorage.getItem("support-thread");
export const threadId = KEPT ?? crypto.randomUUID();
localStorage.setItem("support-thread", threadId);

// After a reload the chat starts empty: one run with nothing new brings the conversation back
// (its MESSAGES_SNAPSHOT), and a pending approval or question with it.
export function ResumeThread() {
  const { agent } = useAgent();
  const { copilotkit } = useCopilotKit();
  useEffect(() => {
    if (!KEPT || agent.messages.length > 0) return;
    agent.threadId = threadId; // before the chat's own effect sets it
    copilotkit.runAgent({ agent });
  }, [agent, copilotkit]);
  return null;
}

// The client tool `pick_date`: what the handler returns is the tool's result ({date}, as the
// assistant's reply "Booked for {result.date}." reads it).
export function PickDate() {
  useFrontendTool({
    name: "pick_date",
    description: "Ask the customer for a delivery date",
    parameters: z.object({ label: z.string().optional() }),
    handler: async () => ({ date: "2026-12-24" }), // your date picker's choice
  });
  return null;
}

// An approval answers for the exact call it shows: the tool and arguments are the consts of its
// responseSchema, so what the customer approved is what runs.
export function approval(interrupt, decision) {
  const { tool, arguments: args } = interrupt.responseSchema.properties.reviewed.properties;
  return { decision, reviewed: { tool: tool.const, arguments: args.const } };
}

// The cards' look: CopilotKit's stylesheet resets buttons and forms, so they say what they are here.
const card = { display: "flex", flexWrap: "wrap", alignItems: "center", gap: "0.5rem", margin: "0.5rem 0",
  padding: "0.75rem", border: "1px solid #c5cad3", borderRadius: "0.75rem" };
const button = { padding: "0.35rem 0.9rem", border: "1px solid #6b7280", borderRadius: "0.5rem", cursor: "pointer" };
const primary = { ...button, background: "#1d4ed8", borderColor: "#1d4ed8", color: "#fff" };
const field = { flex: "1 1 12rem", padding: "0.35rem 0.5rem", border: "1px solid #6b7280", borderRadius: "0.5rem" };

// Approvals and questions arrive as interrupts (RUN_FINISHED with outcome "interrupt").
export function Interrupts() {
  useInterrupt({
    render: ({ interrupt, resolve, cancel }) => (
      <>
        <CancelWhenTheCustomerWrites cancel={cancel} />
        {interrupt?.reason === "approval" ? (
          <div role="group" aria-label={interrupt.message} style={card}>
            <p style={{ flexBasis: "100%", margin: 0, fontWeight: 600 }}>{interrupt.message}</p>
            <button style={primary} onClick={() => resolve(approval(interrupt, "approve"))}>Approve</button>
            <button style={button} onClick={() => resolve(approval(interrupt, "deny"))}>Deny</button>
          </div>
        ) : (
          <Question interrupt={interrupt} answer={(answer) => resolve({ answer })} skip={() => cancel()} />
        )}
      </>
    ),
  });
  return null;
}

// Writing instead of answering: @ag-ui/client starts no run while an interrupt is open, so the
// chat's message waits unsent. Cancelling the card sends it beside the cancellation, and Waypoint
// takes it as the customer's next message (the card is declined with it as the reason).
function CancelWhenTheCustomerWrites({ cancel }) {
  const { agent } = useAgent({ updates: [UseAgentUpdate.OnMessagesChanged] });
  const [shown] = useState(() => agent.messages.length);
  const wrote = agent.messages.slice(shown).some((message) => message.role === "user");
  useEffect(() => {
    if (wrote) cancel();
  }, [wrote]);
  return null;
}

// A question's payload is {answer} (non-empty text); cancelling it declines the question.
function Question({ interrupt, answer, skip }) {
  const [text, setText] = useState("");
  return (
    <form aria-label={interrupt?.message} style={card} onSubmit={(e) => { e.preventDefault(); if (text.trim()) answer(text.trim()); }}>
      <label style={{ display: "contents" }}>
        <span style={{ flexBasis: "100%", fontWeight: 600 }}>{interrupt?.message}</span>
        <input style={field} value={text} onChange={(e) => setText(e.target.value)} />
      </label>
      <button type="submit" style={primary}>Send answer</button>
      <button type="button" style={button} onClick={skip}>Skip</button>
    </form>
  );
}
