// Staff panel behaviour htmx attributes cannot express: polling the inspector (with ETag) when its
// websocket is not open, and copy buttons.
(function () {
  "use strict";
  const POLL_MS = 2000;
  let timer = null;
  let etag = null;

  function live() { return document.querySelector("[data-live-url]"); }

  async function poll() {
    const root = live();
    if (!root) return;
    try {
      const headers = etag ? { "If-None-Match": etag } : {};
      const shown = (document.getElementById("summary") || root).dataset.shown;
      const url = shown ? `${root.dataset.liveUrl}?shown=${encodeURIComponent(shown)}` : root.dataset.liveUrl;
      const response = await fetch(url, { headers, cache: "no-store", credentials: "same-origin" });
      if (response.status === 200) {
        etag = response.headers.get("ETag");
        htmx.swap(document.body, await response.text(), { swapStyle: "none" });
      }
    } catch (e) { /* offline for a moment: the next poll retries */ }
  }

  function startPolling() { if (!timer) { timer = setInterval(poll, POLL_MS); poll(); } }
  function stopPolling() { if (timer) { clearInterval(timer); timer = null; } }

  // A 409 (someone else took the conversation first) answers with the inspector's fragments and a
  // notice that says who has it: htmx drops 4xx bodies by default, and the page would stay silent.
  // Configuration, not an htmx:beforeSwap listener: the winner's push re-renders #control, and with
  // it the loser's form, while the loser's post is in flight; a detached form's events never reach
  // the document, so a listener missed exactly the 409 of the person who lost the race.
  htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "409", swap: true },
    { code: "[45]..", swap: false, error: true },
  ];

  // After a change of control, a push or a poll, the page receives the rows after the head it showed,
  // appended to a list marked data-rows. The answer and the socket may both bring the same row:
  // a list of entries or messages keeps the one it has (they never change, and its payload may be
  // open), a list of runs, calls or actions replaces it in place where it moved on.
  document.addEventListener("htmx:oobBeforeSwap", (event) => {
    const { target, fragment } = event.detail;
    const mode = target.dataset ? target.dataset.rows : null;
    if (!mode || !fragment) return;
    // Table rows arrive in a <table>, which HTML parsing gives a <tbody> of its own: the rows, not
    // a second tbody, go into the page's.
    if (fragment.tagName === "TABLE") {
      for (const body of Array.from(fragment.tBodies)) { fragment.append(...body.rows); body.remove(); }
    }
    for (const row of Array.from(fragment.children)) {
      const have = row.id ? document.getElementById(row.id) : null;
      if (!have) continue;
      if (mode === "update" && have.outerHTML !== row.outerHTML) have.replaceWith(row);
      else row.remove();
    }
  });

  // A form sends the head the page shows now (pushes move it on after the form was drawn), so its
  // answer brings only what came after; a note's form is emptied once its note is in.
  document.addEventListener("htmx:configRequest", (event) => {
    const summary = document.getElementById("summary");
    if (summary && event.detail.parameters.shown !== undefined) event.detail.parameters.shown = summary.dataset.shown || "";
  });
  document.addEventListener("htmx:afterRequest", (event) => {
    const form = event.detail.elt;
    if (event.detail.successful && form.classList && form.classList.contains("note-form")) form.reset();
  });

  // A push re-renders #control: a "Take over from …" confirmation someone has open stays open while
  // the same colleague holds the conversation.
  let rescuing = null;
  document.addEventListener("htmx:oobBeforeSwap", (event) => {
    if (event.detail.target.id !== "control") return;
    const open = event.detail.target.querySelector("details.rescue[open] input[name=from]");
    rescuing = open ? open.value : null;
  });
  document.addEventListener("htmx:oobAfterSwap", () => {
    if (!rescuing) return;
    const from = document.querySelector("#control details.rescue input[name=from]");
    if (from && from.value === rescuing) from.closest("details").open = true;
    rescuing = null;
  });

  document.addEventListener("htmx:wsOpen", () => { const r = live(); if (r) r.dataset.wsOpen = "1"; stopPolling(); });
  document.addEventListener("htmx:wsClose", () => { const r = live(); if (r) delete r.dataset.wsOpen; startPolling(); });
  document.addEventListener("htmx:wsError", startPolling);
  document.addEventListener("DOMContentLoaded", () => {
    const root = live();
    if (root) setTimeout(() => { if (!root.dataset.wsOpen) startPolling(); }, 3000);
  });

  document.addEventListener("click", async (event) => {
    const button = event.target.closest ? event.target.closest("[data-copy]") : null;
    if (!button) return;
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    const label = button.textContent;
    try {
      await navigator.clipboard.writeText(source.textContent.trim());
      button.textContent = "Copied";
    } catch (e) {
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      button.textContent = "Selected: press Ctrl+C";
    }
    setTimeout(() => { button.textContent = label; }, 2000);
  });
})();

// The navigation's counts: customers waiting for a person, customers who wrote last in a conversation
// you hold, turns waiting in quarantine, approvals waiting for the team. Their sum is in the tab's title; a browser notification
// tells of each that goes up (once the staff member allowed them).
(function () {
  "use strict";
  const base = document.title.replace(/^\(\d+\) /, "");
  const BADGES = {
    "waiting-count": (n) => ["A customer is waiting for a person", `${n} waiting in Waypoint`],
    "unanswered-count": (n) => ["A customer wrote to you", `${n} waiting for your reply in Waypoint`],
    "quarantine-count": (n) => ["A turn waits for your decision", `${n} in quarantine in Waypoint`],
    "approvals-count": (n) => ["An approval waits for the team", `${n} waiting for approval in Waypoint`],
  };
  const known = {};

  function count(id) {
    const badge = document.getElementById(id);
    return badge ? Number(badge.dataset.count || 0) : 0;
  }

  function update() {
    let total = 0;
    for (const [id, words] of Object.entries(BADGES)) {
      const now = count(id);
      total += now;
      if (known[id] !== undefined && now > known[id] && "Notification" in window && Notification.permission === "granted") {
        const [title, body] = words(now);
        new Notification(title, { body, tag: `waypoint-${id}` });
      }
      known[id] = now;
    }
    document.title = total ? `(${total}) ${base}` : base;
  }

  // Every page asks for the counts: the live pages' pushes bring only the waiting count.
  const COUNT_MS = 10000;
  async function pollCount() {
    try {
      const response = await fetch(document.body.dataset.waitingUrl, { cache: "no-store", credentials: "same-origin" });
      if (response.status === 200) htmx.swap(document.body, await response.text(), { swapStyle: "none" });
    } catch (e) { /* offline for a moment: the next poll retries */ }
  }

  document.addEventListener("DOMContentLoaded", () => {
    update();
    if (document.body.dataset.waitingUrl) setInterval(pollCount, COUNT_MS);
    const button = document.getElementById("notify-button");
    const state = document.getElementById("notify-state");
    if (button && "Notification" in window) {
      const show = () => {
        button.hidden = Notification.permission !== "default";
        if (state) state.textContent = Notification.permission === "granted" ? "Notifications are on for new requests."
          : Notification.permission === "denied" ? "Notifications are blocked in this browser." : "";
      };
      button.addEventListener("click", () => Notification.requestPermission().then(show));
      show();
    }
  });
  document.addEventListener("htmx:afterSettle", update);
  document.addEventListener("htmx:oobAfterSwap", update);
})();

// Presence: every staff page keeps a socket open while it is open, and says every 20 s that it is
// still there, and whether its person pressed a key, clicked or scrolled since (away after 5 minutes
// without). A closed socket comes back, slower each time.
(function () {
  "use strict";
  if (!document.body || !document.body.dataset.waitingUrl || !("WebSocket" in window)) return;
  const HEARTBEAT_MS = 20000;
  let socket = null;
  let active = true;
  let retry = 1000;

  function connect() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    socket = new WebSocket(`${scheme}//${location.host}/ws/staff/presence/`);
    socket.addEventListener("open", () => { retry = 1000; });
    socket.addEventListener("close", (event) => {
      if (event.code === 4403) return;  // logged out: nothing to be present for
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30000);
    });
  }

  function beat() {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ active }));
    active = false;
  }

  // The first sign of a person after a quiet spell is told at once, so "away" ends when they are back.
  function touched() {
    if (active) return;
    active = true;
    const shown = document.getElementById("presence");
    if (shown && shown.classList.contains("away-idle")) beat();
  }
  for (const name of ["keydown", "pointerdown", "scroll", "focus"]) window.addEventListener(name, touched, { passive: true, capture: true });

  connect();
  setInterval(beat, HEARTBEAT_MS);
})();

// The holder's composer: Enter sends, Shift+Enter makes a new line; "/" at the start of the box
// offers the team's saved replies (arrow keys and Enter, or a click, to insert one; Escape closes).
(function () {
  "use strict";
  const source = document.getElementById("saved-replies");
  const saved = source ? JSON.parse(source.textContent) : [];
  let matches = [];
  let chosen = 0;

  function box() { return document.getElementById("staff-reply"); }
  function menu() { return document.getElementById("saved-reply-menu"); }

  function close() {
    const list = menu();
    if (list) { list.hidden = true; list.replaceChildren(); }
    const field = box();
    if (field) field.removeAttribute("aria-activedescendant");
    matches = [];
  }

  function show() {
    const field = box();
    const list = menu();
    if (!field || !list) return;
    const typed = field.value.match(/^\/([a-z0-9-]*)$/i);
    matches = typed ? saved.filter((r) => r.shortcut.startsWith(typed[1].toLowerCase())).slice(0, 8) : [];
    if (!matches.length) { close(); return; }
    chosen = Math.min(chosen, matches.length - 1);
    list.replaceChildren(...matches.map((reply, i) => {
      const item = document.createElement("li");
      item.id = `saved-reply-${i}`;
      item.setAttribute("role", "option");
      item.setAttribute("aria-selected", String(i === chosen));
      const name = document.createElement("strong");
      name.textContent = `/${reply.shortcut}`;
      const text = document.createElement("span");
      text.textContent = reply.text.length > 80 ? `${reply.text.slice(0, 80)}…` : reply.text;
      item.append(name, " ", text);
      item.addEventListener("mousedown", (event) => { event.preventDefault(); insert(i); });
      return item;
    }));
    list.hidden = false;
    field.setAttribute("aria-activedescendant", `saved-reply-${chosen}`);
  }

  function insert(i) {
    const field = box();
    if (!field || !matches[i]) return;
    field.value = matches[i].text;
    close();
    field.focus();
    field.setSelectionRange(field.value.length, field.value.length);
  }

  document.addEventListener("input", (event) => { if (event.target.id === "staff-reply") { chosen = 0; show(); } });
  document.addEventListener("keydown", (event) => {
    const field = event.target;
    if (field.id !== "staff-reply" || event.isComposing) return;
    if (matches.length) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        chosen = (chosen + (event.key === "ArrowDown" ? 1 : matches.length - 1)) % matches.length;
        show();
        return;
      }
      if (event.key === "Enter" || event.key === "Tab") { event.preventDefault(); insert(chosen); return; }
      if (event.key === "Escape") { event.preventDefault(); close(); return; }
    }
    if (event.key === "Enter" && !event.shiftKey && !event.ctrlKey && !event.altKey && !event.metaKey) {
      event.preventDefault();
      if (field.value.trim()) field.form.requestSubmit();
    }
  });
  document.addEventListener("focusout", (event) => { if (event.target.id === "staff-reply") setTimeout(close, 0); });
})();

// The transcript reads downwards, the newest message last beside the composer: it opens scrolled to
// the end and follows new messages while the reader is at the end (not while they read further up).
(function () {
  "use strict";
  function list() { return document.getElementById("transcript-messages"); }
  let atEnd = true;
  function end() { const l = list(); if (l) l.scrollTop = l.scrollHeight; }
  document.addEventListener("DOMContentLoaded", end);
  document.addEventListener("scroll", (event) => {
    const l = list();
    if (event.target === l) atEnd = l.scrollHeight - l.scrollTop - l.clientHeight < 40;
  }, true);
  document.addEventListener("htmx:oobAfterSwap", () => { if (atEnd) end(); });
})();

// Approval cards (the Approvals queue and the inspector): Edit opens the fields the team may change,
// and a push that brings the same approvals leaves the cards alone, with whatever is typed into them.
(function () {
  "use strict";
  document.addEventListener("click", (event) => {
    const edit = event.target.closest && event.target.closest(".edit-toggle");
    if (!edit) return;
    const fields = document.getElementById(edit.getAttribute("aria-controls"));
    if (!fields) return;
    const open = fields.hidden;
    fields.hidden = !open;
    edit.setAttribute("aria-expanded", String(open));
    if (open) {
      const first = fields.querySelector("input");
      if (first) first.focus();
    }
  });
  document.addEventListener("htmx:oobBeforeSwap", (event) => {
    const { target, fragment } = event.detail;
    const incoming = fragment && fragment.firstElementChild;
    if (target && incoming && target.id === "staff-approvals" && incoming.dataset.key === target.dataset.key) {
      event.detail.shouldSwap = false;
    }
  });
})();
