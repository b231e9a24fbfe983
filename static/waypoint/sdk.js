// Waypoint JavaScript SDK: an ES module with no dependencies and no build step.
//
//   import { Waypoint } from "https://chat.example.com/static/waypoint/sdk.js";
//   const client = new Waypoint({ baseUrl: "https://chat.example.com", token });
//   const agent = await client.agent.open(conversationId, {
//     refreshIntervalMs: 2000,
//     tools: { pick_date: async (args) => ({ date: "2026-12-24" }) },
//   });
//   const unsubscribe = agent.subscribe((state) => render(state));
//   await agent.send("When can you deliver?");
//
// State arrives over the websocket (JSON format) and, whenever that is not open, by polling the
// messages resource with ETag / If-None-Match. Registered client tools run once per pending call
// and their results are submitted; a 409 action_result_conflict is reported (state.conflict and
// onConflict) with the answer that was accepted, never thrown. See docs/sdk.md.

const DEFAULT_REFRESH_MS = 2000;
// While the websocket is open it carries every change; this slow poll only repairs a push that the
// channel layer dropped (the server never promises that every push arrives).
const RESYNC_MS = 15000;
const MAX_BACKOFF_MS = 30000;
const GIVE_UP_AFTER_FAILED_OPENS = 6;

export class WaypointError extends Error {
  constructor(status, code, message, details = {}) {
    super(message || code);
    this.name = "WaypointError";
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

function newKey() {
  if (globalThis.crypto && typeof globalThis.crypto.randomUUID === "function") return globalThis.crypto.randomUUID();
  return `k-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class Waypoint {
  /**
   * @param {{baseUrl?: string, token: string, fetch?: Function, WebSocket?: Function|null}} options
   *   token: a conversation token (never put a workspace API key in a browser).
   *   WebSocket: null turns the websocket off (polling only).
   */
  constructor({ baseUrl = "", token, fetch: fetchImpl, WebSocket: socketImpl } = {}) {
    const here = typeof location !== "undefined" ? location.origin : "";
    this.baseUrl = String(baseUrl || here).replace(/\/+$/, "");
    this.token = token;
    this._fetch = fetchImpl || ((...args) => globalThis.fetch(...args));
    this._WebSocket = socketImpl === undefined ? globalThis.WebSocket : socketImpl;
    this.agent = {
      open: (conversationId, options) => AgentConversation.open(this, conversationId, options),
    };
  }

  /** Call the API; resolves to {status, headers, body}; rejects with a WaypointError for 4xx/5xx. */
  async request(method, path, { body, headers = {} } = {}) {
    const sent = { Accept: "application/json", ...headers };
    if (this.token) sent.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) sent["Content-Type"] = "application/json";
    const response = await this._fetch(this.baseUrl + path, {
      method,
      headers: sent,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
    if (response.status === 304) return { status: 304, headers: response.headers, body: null };
    const text = await response.text();
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch (e) { data = null; }
    }
    if (!response.ok) {
      const error = (data && data.error) || {};
      const retryAfter = Number(response.headers.get("Retry-After")) || undefined;
      throw new WaypointError(response.status, error.code || `http_${response.status}`,
        error.message || response.statusText, { ...error, retryAfter });
    }
    return { status: response.status, headers: response.headers, body: data };
  }

  socketUrl(conversationId, afterSeq) {
    const base = typeof location !== "undefined" ? location.href : undefined;
    const url = new URL(`${this.baseUrl}/ws/conversations/${encodeURIComponent(conversationId)}/`, base);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("token", this.token || "");
    url.searchParams.set("format", "json");
    url.searchParams.set("after_seq", String(afterSeq || 0));
    return url.toString();
  }
}

function mergeMessages(known, incoming) {
  const byId = new Map(known.map((m) => [m.id, m]));
  for (const m of incoming) byId.set(m.id, m);
  return [...byId.values()].sort((a, b) => a.seq - b.seq);
}

export class AgentConversation {
  /** Load the conversation, then keep it current. Rejects (WaypointError) if it cannot be read. */
  static async open(client, conversationId, options = {}) {
    const agent = new AgentConversation(client, conversationId, options);
    await agent.refresh();
    agent._connect();
    agent._schedulePoll();
    return agent;
  }

  constructor(client, conversationId, { refreshIntervalMs = DEFAULT_REFRESH_MS, tools = {}, onConflict, onError } = {}) {
    this.client = client;
    this.conversationId = conversationId;
    this.refreshIntervalMs = Math.max(250, Number(refreshIntervalMs) || DEFAULT_REFRESH_MS);
    this.tools = tools || {};
    this.onConflict = onConflict;
    this.onError = onError;
    this._state = null;
    this._etag = null;
    this._subscribers = new Set();
    this._handled = new Set();
    this._conflict = null;
    this._draft = null;
    this._connection = "polling";
    this._socket = null;
    this._opened = false;
    this._failedOpens = 0;
    this._pollTimer = null;
    this._reconnectTimer = null;
    this._closed = false;
  }

  /** The latest state: the messages resource plus conflict, draft and connection. */
  get state() {
    if (!this._state) return null;
    return { ...this._state, conflict: this._conflict, draft: this._draft, connection: this._connection };
  }

  /** Call `listener(state)` now and on every change; returns a function that unsubscribes. */
  subscribe(listener) {
    this._subscribers.add(listener);
    if (this._state) listener(this.state);
    return () => this._subscribers.delete(listener);
  }

  /** Send a user message (a new turn). Retries once on a network failure with the same Idempotency-Key. */
  async send(text, { expectedSeq, idempotencyKey = newKey() } = {}) {
    const body = { message: text };
    if (expectedSeq !== undefined && expectedSeq !== null) body.expected_seq = expectedSeq;
    const result = await this._post("turns", body, idempotencyKey);
    this.refresh().catch((error) => this._report(error));
    return result;
  }

  /** Start a new turn after an interrupted or failed run (the Continue button). */
  async continue({ idempotencyKey = newKey() } = {}) {
    const result = await this._post("continue", undefined, idempotencyKey);
    this.refresh().catch((error) => this._report(error));
    return result;
  }

  /**
   * Ask for a person (Talk to a person): the agent stops, its pending requests are withdrawn, and the
   * conversation waits in the staff queue. Resolves to the control ({mode: "queued", …}); asking again
   * changes nothing. An assistant without handoff rejects with code "handoff_unavailable".
   */
  async requestHandoff({ reason } = {}) {
    const result = await this._post("handoff", reason ? { reason } : {}, newKey());
    this.refresh().catch((error) => this._report(error));
    return result.control;
  }

  /**
   * While waiting for a person: say why ({reason}), or leave an address ({email}) to which a person's
   * replies are also sent. Resolves to the control; rejects with "control_conflict" when nobody is waited for.
   */
  async leaveHandoffDetails({ reason, email } = {}) {
    const body = {};
    if (reason) body.reason = reason;
    if (email) body.email = email;
    const result = await this._post("handoff/details", body, newKey());
    this.refresh().catch((error) => this._report(error));
    return result.control;
  }

  /**
   * Stop waiting for a person: back to the assistant. Resolves to the control ({mode: "agent", …});
   * rejects with "control_conflict" (its holder named) when a person took the conversation meanwhile.
   */
  async cancelHandoff() {
    const path = `/v1/agent/conversations/${encodeURIComponent(this.conversationId)}/handoff`;
    const response = await this.client.request("DELETE", path);
    this.refresh().catch((error) => this._report(error));
    return response.body.control;
  }

  /**
   * Submit the output of a pending client action (client tool, approval or question).
   * Resolves to {accepted: true, state} or, when someone else answered first, to
   * {accepted: false, conflict} after refreshing: conflict.accepted is the answer that stands.
   */
  async submitResult(callId, output) {
    const runId = this._state && this._state.run_id;
    const path = `/v1/agent/conversations/${encodeURIComponent(this.conversationId)}/runs/${encodeURIComponent(runId || "none")}/results`;
    try {
      const response = await this.client.request("POST", path, { body: { results: [{ call_id: callId, output }] } });
      this._apply(response.body.state, { merge: false });
      return { accepted: true, state: this.state };
    } catch (error) {
      if (!(error instanceof WaypointError) || error.code !== "action_result_conflict") throw error;
      await this.refresh().catch((e) => this._report(e));
      this._conflict = { callId, output, accepted: error.details.accepted || null, message: error.message };
      this._emit();
      if (typeof this.onConflict === "function") this.onConflict(this._conflict);
      return { accepted: false, conflict: this._conflict };
    }
  }

  /**
   * Approve a pending approval with exactly the arguments it was asked with, or with changes:
   * `editedArguments` holds new values of fields among its `editable` ones (a field not editable,
   * or a value its tool's schema refuses, rejects with code "invalid_request"). Resolves as
   * `submitResult` does; an approval that expired rejects with "approval_expired", and one the team
   * must give with "approver_required".
   */
  async approve(callId, { editedArguments } = {}) {
    const output = { decision: "approve", reviewed: this._reviewed(callId) };
    if (editedArguments && Object.keys(editedArguments).length) output.edited_arguments = editedArguments;
    return this.submitResult(callId, output);
  }

  /** Deny a pending approval: the assistant is told and may go on. */
  async deny(callId) {
    return this.submitResult(callId, { decision: "deny", reviewed: this._reviewed(callId) });
  }

  _reviewed(callId) {
    const call = ((this._state && this._state.pending_client_actions) || []).find((c) => c.call_id === callId);
    if (!call || call.kind !== "approval") throw new WaypointError(404, "not_found", `no pending approval ${callId}`, {});
    return { tool: call.tool, arguments: call.arguments };
  }

  /** Forget the last reported conflict. */
  clearConflict() {
    this._conflict = null;
    this._emit();
  }

  /** Read the messages resource now (a 304 when nothing changed costs almost nothing). */
  async refresh() {
    const path = `/v1/runner/conversation/${encodeURIComponent(this.conversationId)}/messages`;
    const headers = this._etag ? { "If-None-Match": this._etag } : {};
    const response = await this.client.request("GET", path, { headers });
    if (response.status === 304) return this.state;
    this._etag = response.headers.get("ETag");
    this._apply(response.body, { merge: false });
    return this.state;
  }

  /** Stop the websocket and polling; the conversation itself is untouched. */
  close() {
    this._closed = true;
    clearTimeout(this._pollTimer);
    clearTimeout(this._reconnectTimer);
    if (this._socket) {
      const socket = this._socket;
      this._socket = null;
      socket.close(1000);
    }
    this._connection = "closed";
    this._emit();
    this._subscribers.clear();
  }

  // --- internals -------------------------------------------------------------------------------

  async _post(action, body, idempotencyKey) {
    const path = `/v1/agent/conversations/${encodeURIComponent(this.conversationId)}/${action}`;
    const options = { body, headers: { "Idempotency-Key": idempotencyKey } };
    try {
      return (await this.client.request("POST", path, options)).body;
    } catch (error) {
      if (error instanceof WaypointError) throw error;
      await sleep(500); // a network failure: the same key makes the retry safe
      return (await this.client.request("POST", path, options)).body;
    }
  }

  _apply(incoming, { merge }) {
    if (!incoming || this._closed) return;
    const current = this._state;
    if (current && incoming.seq < current.seq) return; // an older answer overtaken by a newer one
    const messages = merge && current ? mergeMessages(current.messages, incoming.messages) : incoming.messages;
    this._state = { ...incoming, messages };
    if (!current || incoming.seq !== current.seq) this._draft = null;
    this._emit();
    this._runTools();
  }

  _emit() {
    const snapshot = this.state;
    if (!snapshot) return;
    for (const listener of [...this._subscribers]) {
      try { listener(snapshot); } catch (error) { this._report(error); }
    }
  }

  _report(error) {
    if (typeof this.onError === "function") this.onError(error);
    else if (typeof console !== "undefined") console.warn("waypoint:", error);
  }

  _runTools() {
    const pending = (this._state && this._state.pending_client_actions) || [];
    for (const call of pending) {
      const handler = this.tools[call.tool];
      if (call.kind !== "client_tool" || typeof handler !== "function" || this._handled.has(call.call_id)) continue;
      this._handled.add(call.call_id); // once per call id, whatever happens next
      Promise.resolve()
        .then(() => handler(call.arguments, { callId: call.call_id, tool: call.tool, agent: this }))
        .then((output) => this.submitResult(call.call_id, output === undefined ? null : output))
        .catch((error) => this._report(error));
    }
  }

  _schedulePoll(delay) {
    clearTimeout(this._pollTimer);
    if (this._closed) return;
    const wait = delay !== undefined ? delay : (this._connection === "websocket" ? RESYNC_MS : this.refreshIntervalMs);
    this._pollTimer = setTimeout(() => this._poll(), wait);
  }

  async _poll() {
    if (this._closed) return;
    let next;
    try {
      await this.refresh();
    } catch (error) {
      this._report(error);
      if (error instanceof WaypointError && (error.status === 401 || error.status === 404)) return; // gone for good
      if (error instanceof WaypointError && error.details.retryAfter) next = error.details.retryAfter * 1000;
    }
    this._schedulePoll(next);
  }

  _connect() {
    const Socket = this.client._WebSocket;
    if (this._closed || !Socket || this._failedOpens >= GIVE_UP_AFTER_FAILED_OPENS) return;
    let socket;
    try {
      socket = new Socket(this.client.socketUrl(this.conversationId, this._state ? this._state.seq : 0));
    } catch (error) {
      this._report(error);
      return;
    }
    this._socket = socket;
    let opened = false;
    socket.onopen = () => {
      opened = true;
      this._opened = true;
      this._failedOpens = 0;
      this._connection = "websocket";
      this._emit();
      this._schedulePoll();
    };
    socket.onmessage = (event) => {
      let message;
      try { message = JSON.parse(event.data); } catch (e) { return; }
      if (message.type === "state") {
        this._apply(message.state, { merge: true });
      } else if (message.type === "draft") {
        this._draft = { run_id: message.run_id, text: message.text };
        this._emit();
      }
    };
    socket.onclose = (event) => {
      if (this._socket !== socket || this._closed) return;
      this._socket = null;
      if (!opened) this._failedOpens += 1;
      this._connection = "polling";
      this._emit();
      this._schedulePoll(0); // catch up on what happened while the socket was down
      if (event.code === 4401 || event.code === 4403 || event.code === 4404) return; // refused for good: polling only
      const attempt = opened ? 0 : this._failedOpens;
      const delay = Math.min(MAX_BACKOFF_MS, 500 * 2 ** attempt) * (0.5 + Math.random() / 2);
      clearTimeout(this._reconnectTimer);
      this._reconnectTimer = setTimeout(() => this._connect(), delay);
    };
    socket.onerror = () => {}; // onclose follows and decides
  }
}
