// The SDK demo page's script: everything it does goes through sdk.js. It answers every kind of
// pending request the SDK exposes (approval, question, client tool) with a card of its own.
import { Waypoint } from "./sdk.js";

const params = new URLSearchParams(location.search);
const conversationId = params.get("conversation");
const autoDate = params.get("auto");
const $ = (id) => document.getElementById(id);
let agent = null;

function text(tag, content, className) {
  const element = document.createElement(tag);
  element.textContent = content;
  if (className) element.className = className;
  return element;
}

function button(label, onClick, className) {
  const element = text("button", label, className);
  element.type = "button";
  if (onClick) element.addEventListener("click", onClick);
  return element;
}

// What went wrong, in words for the person at the page, never only an error code.
const PROBLEMS = {
  turn_conflict: "The assistant is still on your last message. Your message is kept: send it again in a moment.",
  conversation_completed: "This conversation is complete: it takes no more messages.",
  rate_limited: "Too many messages at once. Your message is kept: wait a moment and send it again.",
  unauthorized: "This link no longer opens the conversation: its token is wrong or has expired. Ask for a new link.",
  forbidden: "This link may not do that in this conversation.",
  not_found: "No conversation is at this link: its token is wrong or has expired. Ask for a new link.",
  handoff_unavailable: "No person can join this conversation: the assistant answers it alone.",
};

function problemWords(error) {
  if (error && PROBLEMS[error.code]) return PROBLEMS[error.code];
  if (error && !error.status) return "We could not reach the server. Check your connection; what you typed is kept.";
  return (error && error.message) || "Something went wrong.";
}

function showProblem(error) {
  const box = $("problem");
  box.textContent = error ? problemWords(error) : "";
  box.hidden = !error;
  if (error) box.dataset.code = error.code || "network";
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
    // Cancel declines the request: the assistant is told no date was picked.
    form.append(label, input, text("button", "Submit", "primary"), button("Cancel", () => {
      form.remove();
      resolve({ declined: true });
    }));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      form.remove();
      resolve({ date: input.value });
    });
    $("actions").append(form);
  });
}
const TOOLS = { pick_date: pickDate };

// An approval's answer in a person's words; any other answer as it was given.
function answerWords(output) {
  if (output && output.decision === "expired") return "Expired";
  if (output && output.decision === "approve" && output.edited_arguments) {
    const was = (output.reviewed && output.reviewed.arguments) || {};
    const changes = Object.entries(output.edited_arguments).map(([name, value]) => `${name} ${was[name]} → ${value}`);
    return `Approved with changes: ${changes.join(", ")}`;
  }
  if (output && output.decision) return output.decision === "approve" ? "Approved" : "Denied";
  if (output && output.declined) return "Declined";
  if (output && typeof output.answer === "string") return output.answer;
  return JSON.stringify(output);
}

function argumentList(args) {
  const list = document.createElement("dl");
  for (const [name, value] of Object.entries(args || {})) {
    list.append(text("dt", name), text("dd", typeof value === "string" ? value : JSON.stringify(value)));
  }
  return list;
}

async function answer(card, callId, output) {
  card.querySelectorAll("button, input").forEach((el) => { el.disabled = true; });
  try {
    const result = await agent.submitResult(callId, output);
    showProblem(null);
    if (result.accepted) card.remove();
  } catch (error) {
    showProblem(error);
    card.querySelectorAll("button, input").forEach((el) => { el.disabled = false; });
  }
}

// Edit: a field per editable argument (a number stays a number), then Approve with changes, which
// sends only the fields that differ from what the assistant asked for.
function editor(form, call, reviewed) {
  const box = document.createElement("div");
  box.className = "edit";
  box.hidden = true;
  const inputs = {};
  for (const name of call.editable) {
    const was = call.arguments[name];
    const input = document.createElement("input");
    input.id = `edit-${call.call_id}-${name}`;
    input.type = typeof was === "number" ? "number" : "text";
    if (input.type === "number") input.step = "any";
    input.value = was === undefined || was === null ? "" : String(was);
    const label = text("label", `${name} (asked for: ${was === undefined ? "—" : was})`);
    label.htmlFor = input.id;
    box.append(label, input);
    inputs[name] = input;
  }
  box.append(button("Approve with changes", () => {
    const edits = {};
    for (const [name, input] of Object.entries(inputs)) {
      const value = input.type === "number" && input.value !== "" ? Number(input.value) : input.value;
      if (value !== call.arguments[name]) edits[name] = value;
    }
    const output = { decision: "approve", reviewed };
    if (Object.keys(edits).length) output.edited_arguments = edits;
    answer(form, call.call_id, output);
  }, "primary"));
  const toggle = button("Edit", () => {
    box.hidden = !box.hidden;
    toggle.setAttribute("aria-expanded", String(!box.hidden));
  });
  toggle.setAttribute("aria-expanded", "false");
  const wrap = document.createElement("div");
  wrap.append(toggle, box);
  return wrap;
}

// One card per pending request, keyed by its call id, so what a person typed survives each push.
function card(call) {
  const form = document.createElement("form");
  form.className = "card pending";
  form.id = `call-${call.call_id}`;
  const heading = `heading-${call.call_id}`;
  form.setAttribute("aria-labelledby", heading);
  const args = call.arguments || {};
  if (call.kind === "approval") {
    form.append(text("h2", call.title), argumentList(args));
    form.firstChild.id = heading;
    if (call.reattempt_of) {
      form.append(text("p", `An earlier attempt (${call.reattempt_of.attempted_at}) may already have gone through; `
        + "approving sends it again under the same identity, so it is not done twice.", "note"));
    }
    if (call.approver === "staff") {
      // The team gives this one: the customer waits, and may keep writing.
      form.append(text("p", "Waiting for approval from the team", "note"));
      return form;
    }
    if (call.expires_at) form.append(text("p", `Answer by ${new Date(call.expires_at).toLocaleTimeString()}: after that it expires.`, "note"));
    const reviewed = { tool: call.tool, arguments: call.arguments };
    form.append(
      button("Approve", () => answer(form, call.call_id, { decision: "approve", reviewed }), "primary"),
      button("Deny", () => answer(form, call.call_id, { decision: "deny", reviewed })),
    );
    if ((call.editable || []).length) form.append(editor(form, call, reviewed));
  } else if (call.kind === "question") {
    const input = document.createElement("input");
    input.id = `answer-${call.call_id}`;
    input.required = true;
    const label = text("label", "Your answer");
    label.htmlFor = input.id;
    form.append(text("h2", call.title || "A question for you"), label, input,
      text("button", "Submit", "primary"), button("Skip", () => answer(form, call.call_id, { declined: true })));
    form.firstChild.id = heading;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      answer(form, call.call_id, { answer: input.value });
    });
  } else {
    // A client tool this page has no handler for: the application answers it, or the person declines.
    form.append(text("h2", `Waiting for the application: ${call.title}`), argumentList(args),
      button("Cancel", () => answer(form, call.call_id, { declined: true })));
    form.firstChild.id = heading;
  }
  return form;
}

// An answered request stays as a receipt: what was asked, and its answer in words.
function receiptWords(call) {
  const words = { withdrawn: "Withdrawn: handed to a person", declined: "Declined", expired: "Expired" }[call.status];
  return `${call.title} · ${words || answerWords(call.output)}`;
}

function renderCards(state) {
  const pending = (state.pending_client_actions || []).filter((call) => !(call.kind === "client_tool" && TOOLS[call.tool]));
  const wanted = new Set(pending.map((call) => `call-${call.call_id}`));
  document.querySelectorAll("#actions .card.pending").forEach((el) => { if (!wanted.has(el.id)) el.remove(); });
  for (const call of pending) {
    if (!$(`call-${call.call_id}`)) $("actions").append(card(call));
  }
}

const RUN_WORDS = {
  running: "The assistant is working…",
  waiting: "Waiting for your answer below.",
  completed: "",
  interrupted: "The last reply was interrupted. Press Continue to go on.",
  failed: "The last reply failed. Press Continue to try again.",
  expired: "The request expired. Press Continue to go on.",
  handed_off: "A person has taken over the conversation.",
};

// A message as the transcript shows it; a person's reply under their name, apart from the assistant's.
function message(m) {
  const item = text("li", "", m.role);
  if (m.role === "staff") item.append(text("strong", `${(m.author && m.author.name) || "A person"}: `));
  item.append(document.createTextNode(m.text));
  if ((m.citations || []).length) {
    // The passages the reply cites (docs/knowledge.md): a link for those with a web address.
    const sources = document.createElement("ol");
    sources.className = "sources";
    sources.setAttribute("aria-label", "Sources");
    for (const cited of m.citations) {
      const line = text("li", `[${cited.n}] `);
      const safe = /^https?:\/\//.test(cited.url || "");
      const title = safe ? Object.assign(text("a", cited.title), { href: cited.url, rel: "noopener noreferrer", target: "_blank" })
        : text("span", cited.title);
      line.append(title);
      sources.append(line);
    }
    item.append(sources);
  }
  return item;
}

let handoffRefused = false;

function render(state) {
  const words = state.conversation_status === "completed" ? "This conversation is complete" : (RUN_WORDS[state.run_status] || "");
  const connection = state.connection === "websocket" ? "Live" : state.connection === "polling" ? "Checking for updates" : "Not connected";
  $("status").textContent = [words, connection].filter(Boolean).join(" · ");
  $("status").dataset.runStatus = state.run_status || "";
  $("status").dataset.connection = state.connection;
  $("status").dataset.seq = state.seq;
  $("transcript").replaceChildren(...state.messages.map(message));
  $("receipts").replaceChildren(...(state.answered_client_actions || []).map((call) => text("li", receiptWords(call))));
  const control = state.control || { mode: "agent" };
  $("handoff").hidden = handoffRefused || control.mode !== "agent" || state.conversation_status === "completed";
  $("control").textContent = control.mode === "queued" ? "Waiting for a person to join…"
    : control.mode === "human" ? `${(control.staff && control.staff.name) || "A person"} is answering you.` : "";
  $("continue").hidden = !["interrupted", "failed", "expired"].includes(state.run_status);
  const done = state.conversation_status === "completed";
  $("message").disabled = done;
  $("composer").querySelector("[type=submit]").disabled = done;
  renderCards(state);
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
  if (!conversationId || !params.get("token")) {
    // Nothing to talk to: no composer that looks as if it worked.
    $("status").textContent = "Open this page with ?conversation=<id>&token=<conversation token>.";
    $("composer").hidden = true;
    return;
  }
  // ?socket=0 turns the websocket off, to watch the polling fallback (ETag / If-None-Match).
  const socket = params.get("socket") === "0" ? { WebSocket: null } : {};
  const client = new Waypoint({ baseUrl: location.origin, token: params.get("token"), ...socket });
  try {
    agent = await client.agent.open(conversationId, {
      refreshIntervalMs: 2000,
      tools: TOOLS,
      onError: (error) => {
        $("status").dataset.error = error.code || error.message;
        showProblem(error);
      },
    });
  } catch (error) {
    $("status").textContent = "Could not open the conversation.";
    $("composer").hidden = true;
    showProblem(error);
    return;
  }
  window.waypointAgent = agent; // for the browser console
  agent.subscribe(render);
  $("composer").addEventListener("submit", async (event) => {
    event.preventDefault();
    const message = $("message").value.trim();
    if (!message) return;
    try {
      await agent.send(message);
      // Cleared only once the server took it: a refused message stays to be sent again.
      if ($("message").value.trim() === message) $("message").value = "";
      showProblem(null);
    } catch (error) {
      $("status").dataset.error = error.code || "network";
      showProblem(error);
    }
  });
  $("continue").addEventListener("click", () => agent.continue().then(() => showProblem(null), showProblem));
  $("handoff").addEventListener("click", () => agent.requestHandoff().then(() => showProblem(null), (error) => {
    if (error.code === "handoff_unavailable") {
      handoffRefused = true; // this assistant hands nothing over: the button stays away
      $("handoff").hidden = true;
    }
    showProblem(error);
  }));
}

main();
