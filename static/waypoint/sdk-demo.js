// The SDK demo page's script: everything it does goes through sdk.js.
import { Waypoint } from "./sdk.js";

const params = new URLSearchParams(location.search);
const conversationId = params.get("conversation");
const autoDate = params.get("auto");
const $ = (id) => document.getElementById(id);

function text(tag, content, className) {
  const element = document.createElement(tag);
  element.textContent = content;
  if (className) element.className = className;
  return element;
}

// pick_date: answered by this page at once (?auto=<date>), or by a person in a form.
function pickDate(args, { callId }) {
  if (autoDate) return { date: autoDate };
  return new Promise((resolve) => {
    const form = document.createElement("form");
    form.className = "card";
    form.id = `call-${callId}`;
    const label = text("label", (args && args.label) || "Date");
    const input = document.createElement("input");
    input.type = "date";
    input.required = true;
    input.id = `date-${callId}`;
    label.htmlFor = input.id;
    form.append(label, input, text("button", "Submit"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      form.remove();
      resolve({ date: input.value });
    });
    $("actions").append(form);
  });
}

// An approval's answer in a person's words; any other answer as it was given.
function answerWords(output) {
  if (output && output.decision) return output.decision === "approve" ? "Approved" : "Denied";
  return JSON.stringify(output);
}

function render(state) {
  $("status").textContent = `Run ${state.run_status || "none"} · ${state.conversation_status} · ${state.connection} · seq ${state.seq}`;
  $("status").dataset.runStatus = state.run_status || "";
  $("status").dataset.connection = state.connection;
  $("transcript").replaceChildren(...state.messages.map((m) => text("li", m.text, m.role)));
  $("continue").hidden = !["interrupted", "failed", "expired"].includes(state.run_status);
  const box = $("conflict");
  if (state.conflict) {
    const accepted = state.conflict.accepted || {};
    box.replaceChildren(
      text("strong", "Someone else already answered"),
      text("p", `Accepted answer: ${answerWords(accepted.output)}`),
      text("p", `Answered by ${accepted.answered_by || "someone"}${accepted.answered_at ? ` at ${accepted.answered_at}` : ""}`),
    );
    box.hidden = false;
  } else {
    box.hidden = true;
  }
}

async function main() {
  // ?socket=0 turns the websocket off, to watch the polling fallback (ETag / If-None-Match).
  const socket = params.get("socket") === "0" ? { WebSocket: null } : {};
  const client = new Waypoint({ baseUrl: location.origin, token: params.get("token"), ...socket });
  const agent = await client.agent.open(conversationId, {
    refreshIntervalMs: 2000,
    tools: { pick_date: pickDate },
    onError: (error) => { $("status").dataset.error = error.code || error.message; },
  });
  window.waypointAgent = agent; // for the browser console
  agent.subscribe(render);
  $("composer").addEventListener("submit", async (event) => {
    event.preventDefault();
    const message = $("message").value.trim();
    if (!message) return;
    $("message").value = "";
    await agent.send(message).catch((error) => { $("status").dataset.error = error.code; });
  });
  $("continue").addEventListener("click", () => agent.continue());
}

main().catch((error) => { $("status").textContent = `Could not open the conversation: ${error.message}`; });
