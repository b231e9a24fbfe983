// Behaviour of the conversation page and the widget pages that htmx attributes cannot express:
// keyboard sending, merging pushed fragments without losing what the visitor is typing, polling
// (with ETag) whenever the websocket is not delivering, and — inside the embed iframe — storing
// the conversation in this origin's localStorage and talking to the host page by postMessage.
(function () {
  "use strict";
  const POLL_MS = 2000;
  const HEARTBEAT_MS = 30000;
  // While the page shows the assistant at work, a quiet socket is asked sooner: the push lost on
  // the way may be the one that ends the turn.
  const WORKING_HEARTBEAT_MS = 5000;
  const HEARTBEAT_GRACE_MS = 5000;
  const STORE_PREFIX = "waypoint:conversation:";
  const DRAFT_PREFIX = "waypoint:draft:";
  // Polls that failed in a row (no answer, or a 5xx) before the page says the server is not answering.
  const STALLED_AFTER_FAILED_POLLS = 2;
  const LINK_INVALID = "This link is invalid or has expired — start a new conversation.";

  // Reconnect quickly after a server restart; polling covers the gap meanwhile.
  htmx.config.wsReconnectDelay = (retry) => Math.min(1000 * 2 ** retry, 10000) * (0.5 + Math.random() / 2);
  // 403/404/409/422 answers carry the fragments that explain them (someone else answered, the
  // request closed, …), so they are swapped like a success. This is configuration, not an
  // htmx:beforeSwap listener: the winner's push can replace a card while its post is in flight,
  // and the events of a detached form never reach the document, so a listener missed exactly
  // the 409 of the person who lost the race.
  htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "40[349]|422", swap: true },
    { code: "[45]..", swap: false, error: true },
  ];

  // --- the conversation kept by the widget ------------------------------------------------------
  // In this (the iframe's) origin's localStorage. Browsers that deny storage to third-party frames
  // get the fallback: the host page keeps the record for us (embed.js, asked by postMessage) and
  // hands it back in the fragment of the iframe's URL, which never reaches a server.
  function usableStorage(name) {
    try {
      const storage = window[name];
      storage.getItem(STORE_PREFIX); // a denied frame throws here, not on the property
      return storage;
    } catch (e) {
      return null;
    }
  }
  function ownStorage() { return usableStorage("localStorage"); }
  const store = {
    read(assistant) {
      const storage = ownStorage();
      if (storage) {
        try { return JSON.parse(storage.getItem(STORE_PREFIX + assistant) || "null"); } catch (e) { return null; }
      }
      const kept = new URLSearchParams(window.location.hash.slice(1));
      return kept.get("conversation") ? { conversation_id: kept.get("conversation"), token: kept.get("token") || "", who: kept.get("who") || "" } : null;
    },
    write(assistant, value) {
      const storage = ownStorage();
      if (storage) storage.setItem(STORE_PREFIX + assistant, JSON.stringify(value));
      else toHost("store", { conversation: value });
    },
    clear(assistant) {
      const storage = ownStorage();
      if (storage) storage.removeItem(STORE_PREFIX + assistant);
      else toHost("forget");
    },
  };

  // What the visitor is typing, kept per tab so that a reload does not lose it. A widget frame
  // denied its storage asks the host page to keep it, which hands it back when the frame is ready.
  const drafts = {
    storage() { return usableStorage("sessionStorage"); },
    read(conversation) {
      const storage = drafts.storage();
      try { return (storage && storage.getItem(DRAFT_PREFIX + conversation)) || ""; } catch (e) { return ""; }
    },
    write(conversation, text) {
      const storage = drafts.storage();
      if (!storage) {
        toHost("draft", { conversation_id: conversation, text: text });
        return;
      }
      try {
        if (text) storage.setItem(DRAFT_PREFIX + conversation, text);
        else storage.removeItem(DRAFT_PREFIX + conversation);
      } catch (e) { /* storage full: the draft is simply not kept */ }
    },
  };

  // --- the host page --------------------------------------------------------------------------
  function embedRoot() { return document.querySelector("[data-embed-assistant]"); }

  function hostOrigin() {
    const root = embedRoot();
    const host = root ? root.dataset.embedHost : "";
    if (!host || window.parent === window) return "";
    // Where the browser says who frames us, it must be the origin the server checked.
    const ancestors = window.location.ancestorOrigins;
    if (ancestors && ancestors.length && ancestors[0] !== host) return "";
    return host;
  }

  function toHost(type, detail) {
    const origin = hostOrigin();
    if (origin) window.parent.postMessage(Object.assign({ source: "waypoint", type: type }, detail || {}), origin);
  }

  window.addEventListener("message", (event) => {
    const origin = hostOrigin();
    if (!origin || event.origin !== origin || event.source !== window.parent) return;
    const data = event.data || {};
    if (data.source !== "waypoint-host") return;
    if (data.type === "open") {
      focusFirstField();
      document.dispatchEvent(new CustomEvent("waypoint:shown"));
    }
    const box = document.getElementById("message");
    if (data.type === "draft" && typeof data.text === "string" && box && !box.value) {
      box.value = data.text;
      autosize(box);
    }
  });

  function embedQuery(root) {
    return new URLSearchParams({ embed: "1", host: root.dataset.embedHost || "", color: root.dataset.accent || "" }).toString();
  }

  // The host's colour, as a shade that stands out in each colour scheme: at least 3:1 against the
  // page's background (WCAG's contrast for controls), so a dark green host colour is lightened on the
  // dark background instead of drawing dark buttons on near-black; the text on it is whichever of
  // near-white or near-black reads better. Set through the CSSOM, which the page's CSP allows.
  const BACKGROUNDS = { light: [255, 255, 255], dark: [17, 22, 28] }; // waypoint.css --bg
  const darkScheme = window.matchMedia("(prefers-color-scheme: dark)");

  function luminance(rgb) {
    const [r, g, b] = rgb.map((v) => {
      const c = v / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  }

  function contrast(a, b) {
    const [high, low] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (high + 0.05) / (low + 0.05);
  }

  function readableShade(rgb, background) {
    const toward = luminance(background) > 0.5 ? [0, 0, 0] : [255, 255, 255];
    let shade = rgb;
    for (let step = 1; contrast(shade, background) < 3 && step <= 20; step += 1) {
      shade = rgb.map((v, i) => Math.round(v + ((toward[i] - v) * step) / 20));
    }
    return shade;
  }

  function applyAccent(root) {
    const color = root && root.dataset.accent;
    if (!color || !/^#[0-9a-f]{6}$/i.test(color)) return;
    const rgb = [1, 3, 5].map((i) => parseInt(color.slice(i, i + 2), 16));
    const apply = () => {
      const shade = readableShade(rgb, darkScheme.matches ? BACKGROUNDS.dark : BACKGROUNDS.light);
      const text = contrast(shade, [255, 255, 255]) >= contrast(shade, [17, 17, 17]) ? "#ffffff" : "#111111";
      document.documentElement.style.setProperty("--brand", `rgb(${shade.join(", ")})`);
      document.documentElement.style.setProperty("--brand-fg", text);
    };
    apply();
    darkScheme.addEventListener("change", apply);
  }

  function focusFirstField(since = performance.now()) {
    const field = document.querySelector("#cards input:not([type=hidden]), #message");
    if (!field || field.disabled) return;
    field.focus({ preventScroll: true });
    // The host has only just shown the frame: until the frame is laid out at its new size, nothing in it
    // takes the focus, and the visitor's first keys would go nowhere. Try again each frame, briefly.
    if (document.activeElement !== field && performance.now() - since < 1000) {
      requestAnimationFrame(() => focusFirstField(since));
    }
  }

  // --- keyboard and composer --------------------------------------------------------------------
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && hostOrigin()) {
      toHost("close");
      return;
    }
    const target = event.target;
    // Keys typed into the frame before anything in it has the focus are meant for the message box:
    // focused during the keydown, it receives the character. Just shown by the host, the frame may not
    // be laid out yet and the box not take the focus; then the character is added to it here.
    const box = document.getElementById("message");
    if (hostOrigin() && target === document.body && box && !box.disabled && event.key.length === 1
        && !event.ctrlKey && !event.metaKey && !event.altKey && !event.isComposing) {
      box.focus({ preventScroll: true });
      if (document.activeElement !== box) {
        event.preventDefault();
        box.value += event.key;
        box.dispatchEvent(new Event("input", { bubbles: true }));
      }
      return;
    }
    if (target && target.id === "message" && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      const button = target.form && target.form.querySelector(".send-button");
      if (target.value.trim() && !(button && button.disabled)) target.form.requestSubmit(button);
    }
  });

  function autosize(textarea) {
    textarea.style.height = "auto";
    textarea.style.height = Math.min(textarea.scrollHeight + 2, 144) + "px";
  }
  document.addEventListener("input", (event) => { if (event.target.id === "message") autosize(event.target); });

  document.addEventListener("click", (event) => {
    if (event.target.closest && event.target.closest("[data-close-widget]")) toHost("close");
    const copy = event.target.closest && event.target.closest("[data-copy-link]");
    if (copy) copyLink(copy);
    // An approval's Edit opens the fields the person may change, and closes them again.
    const edit = event.target.closest && event.target.closest(".edit-toggle");
    if (edit) {
      const fields = document.getElementById(edit.getAttribute("aria-controls"));
      if (!fields) return;
      const open = fields.hidden;
      fields.hidden = !open;
      edit.setAttribute("aria-expanded", String(open));
      if (open) {
        const first = fields.querySelector("input");
        if (first) first.focus();
      }
    }
  });

  // Opening a card's Details must not push its buttons out of view: the person opened it to decide.
  document.addEventListener("toggle", (event) => {
    const details = event.target;
    if (!details.open || !details.classList || !details.classList.contains("call-details")) return;
    const card = details.closest("#cards .card");
    const buttons = card && card.querySelectorAll("button:not([hidden])");
    if (buttons && buttons.length) buttons[buttons.length - 1].scrollIntoView({ block: "nearest" });
  }, true);

  // The conversation's link, copied; where the clipboard is refused, shown selected to copy by hand.
  async function copyLink(button) {
    const link = button.dataset.copyLink;
    const status = document.getElementById("copy-link-status");
    try {
      await navigator.clipboard.writeText(link);
      button.textContent = "Link copied";
      if (status) status.textContent = "Link copied";
      setTimeout(() => { button.textContent = "Copy link"; }, 2500);
    } catch (e) {
      const field = document.createElement("input");
      field.readOnly = true;
      field.value = link;
      field.setAttribute("aria-label", "This conversation's link");
      field.className = "copy-link-field";
      button.replaceWith(field);
      field.select();
    }
  }

  // --- the widget's start page: resume a stored conversation, or greet --------------------------
  function startPage(main) {
    const assistant = main.dataset.embedAssistant;
    const who = main.dataset.who || "";
    if (main.dataset.identityRejected) toHost("error", { code: "identity_rejected", message: main.dataset.identityRejected });
    if (!hostOrigin()) main.querySelectorAll("[data-close-widget]").forEach((b) => { b.hidden = true; });
    const greet = () => { document.body.classList.remove("resuming"); toHost("ready", { conversation_id: null }); };
    if (main.hasAttribute("data-fresh")) {
      store.clear(assistant);
      greet();
      return;
    }
    const saved = store.read(assistant);
    if (saved && saved.conversation_id && (saved.who || "") === who) {
      document.body.classList.add("resuming");
      const id = encodeURIComponent(saved.conversation_id);
      const token = encodeURIComponent(saved.token);
      fetch(`/c/${id}/live?token=${token}`, { cache: "no-store", credentials: "omit" })
        .then((response) => {
          if (response.ok) {
            window.location.replace(`/c/${id}?token=${token}&${embedQuery(main)}`);
            return;
          }
          if (response.status === 404) store.clear(assistant);
          greet();
        })
        .catch(greet);
      return;
    }
    const resume = document.getElementById("resume");
    if (resume) {
      resume.submit();
      return;
    }
    greet();
  }

  // --- the conversation page: live updates --------------------------------------------------------
  const TYPING_EVERY_MS = 2500;

  function conversationPage(main) {
    const body = document.getElementById("chat-body");
    const assistant = main.dataset.embedAssistant;
    let healthy = false;
    let socket = null;
    let lastMessageAt = 0;
    let lastReplyAt = 0; // the last answer to this page's own request: it may show a turn just started
    let syncSentAt = 0;
    let lastEtag = null;
    let polling = false;
    let cardInteraction = null; // the card's form whose request is on its way
    let stickToBottom = true;
    let everOnline = false;
    let failedPolls = 0;
    const conversation = main.dataset.conversation;
    // Only useful with this script running, so made by it: a button that takes the reader down.
    const newMessages = document.createElement("button");
    newMessages.type = "button";
    newMessages.id = "new-messages";
    newMessages.className = "new-messages small";
    newMessages.textContent = "New messages ↓";
    newMessages.hidden = true;
    body.appendChild(newMessages);
    // A card is known by its id and its run: a later run (the re-attempt Continue leads to) may ask
    // under the same call id again, and that is a new request.
    function cardKey(card) {
      const run = card.querySelector("input[name=run_id]");
      return `${card.id}@${run ? run.value : ""}`;
    }
    function cards() { return Array.from(document.querySelectorAll("#cards form.card")); }
    const seenCards = new Set(cards().map(cardKey));

    const box = document.getElementById("message");
    if (box && !box.value) {
      box.value = drafts.read(conversation);
      if (box.value) autosize(box);
    }
    document.addEventListener("input", (event) => { if (event.target.id === "message") drafts.write(conversation, event.target.value); });
    // While a person has the conversation (or one was asked for), they see that the customer is
    // typing: the socket says so at most every few seconds; the words go only when sent.
    let typingSaidAt = 0;
    document.addEventListener("input", (event) => {
      const status = document.getElementById("status");
      if (event.target.id !== "message" || !socket || !status || status.dataset.control === "agent") return;
      if (Date.now() - typingSaidAt < TYPING_EVERY_MS) return;
      typingSaidAt = Date.now();
      socket.send("typing");
    });

    if (assistant) {
      store.write(assistant, { conversation_id: main.dataset.conversation, token: main.dataset.token, who: main.dataset.who || "" });
      if (!hostOrigin()) main.querySelectorAll("[data-close-widget]").forEach((b) => { b.hidden = true; });
      toHost("ready", { conversation_id: main.dataset.conversation });
    }

    function nearBottom() { return body.scrollHeight - body.scrollTop - body.clientHeight < 80; }
    function scrollToEnd() { body.scrollTop = body.scrollHeight; }
    function showNewMessages(show) { newMessages.hidden = !show; }
    body.addEventListener("scroll", () => {
      // A frame the host keeps hidden has no height: its scroll position says nothing of the reader.
      if (!body.clientHeight) return;
      stickToBottom = nearBottom();
      if (stickToBottom) showNewMessages(false);
    }, { passive: true });
    // A soft keyboard shrinks the transcript's area: a reader at the end stays there.
    new ResizeObserver(() => { if (body.clientHeight && stickToBottom) scrollToEnd(); }).observe(body);
    // Hidden by the host, the frame lays nothing out and its scroll position falls to the top; replies that
    // came in meanwhile are below. Shown again, a reader who was at the end is taken to the newest.
    function revealEnd(since) {
      if (!body.clientHeight) {
        if (performance.now() - since < 2000) requestAnimationFrame(() => revealEnd(since));
        return;
      }
      if (stickToBottom) scrollToEnd();
      else if (!nearBottom()) showNewMessages(true);
    }
    document.addEventListener("waypoint:shown", () => requestAnimationFrame(() => revealEnd(performance.now())));
    newMessages.addEventListener("click", () => {
      stickToBottom = true;
      scrollToEnd();
      showNewMessages(false);
    });
    scrollToEnd();

    // "Online" only while the socket delivers; otherwise the page says it is (re)connecting, and
    // once polls stop getting answers too, the typing dots give way to a notice that says so.
    function stalled() { return !healthy && failedPolls >= STALLED_AFTER_FAILED_POLLS; }
    function markLive() {
      main.dataset.live = healthy ? "ws" : "poll";
      if (healthy) everOnline = true;
      main.dataset.connection = healthy ? "online" : everOnline ? "reconnecting" : "connecting";
      const line = document.getElementById("connection");
      const text = healthy ? "" : revoked ? "Not connected" : everOnline ? "Reconnecting…" : "Connecting…";
      if (line && line.textContent !== text) line.textContent = text;
      main.classList.toggle("stalled", stalled() && !revoked);
      const notice = document.getElementById("stalled");
      if (notice) notice.hidden = !(stalled() && !revoked);
      // Asking for a person needs the server: while it cannot be reached the press would go nowhere.
      document.querySelectorAll("#handoff button").forEach((button) => { button.disabled = stalled() || revoked; });
    }

    // --- times: relative, the exact one on hover, a separator where a day begins -------------------
    const MINUTE = 60000;
    // Times read in the page's language, like the words around them, not in the browser's.
    const pageLanguage = document.documentElement.lang || undefined;
    function dayKey(date) {
      return [date.getFullYear(), String(date.getMonth() + 1).padStart(2, "0"), String(date.getDate()).padStart(2, "0")].join("-");
    }
    function dayLabel(date, now) {
      if (dayKey(date) === dayKey(now)) return "Today";
      if (dayKey(date) === dayKey(new Date(now.getTime() - 24 * 60 * MINUTE))) return "Yesterday";
      const year = date.getFullYear() === now.getFullYear() ? undefined : "numeric";
      return date.toLocaleDateString(pageLanguage, { weekday: "long", day: "numeric", month: "long", year: year });
    }
    function ago(date, now) {
      const elapsed = now - date;
      if (elapsed < MINUTE) return "just now";
      if (elapsed < 60 * MINUTE) return `${Math.floor(elapsed / MINUTE)} min ago`;
      return date.toLocaleTimeString(pageLanguage, { hour: "2-digit", minute: "2-digit" });
    }
    function setText(el, text) { if (el && el.textContent !== text) el.textContent = text; }
    function stampTimes() {
      // Times in a card's words (when an interrupted attempt was made), in the viewer's time zone.
      document.querySelectorAll("#cards time.local-time, #transcript time.local-time").forEach((time) => {
        const date = new Date(time.dateTime);
        if (isNaN(date)) return;
        const now = new Date();
        setText(time, dayKey(date) === dayKey(now) ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
          : date.toLocaleString([], { dateStyle: "medium", timeStyle: "short" }));
        time.title = date.toLocaleString([], { dateStyle: "full", timeStyle: "short" });
      });
      const transcript = document.getElementById("transcript");
      if (!transcript) return;
      const now = new Date();
      let day = "";
      Array.from(transcript.children).forEach((item) => {
        const time = item.querySelector("time.when");
        const date = time && new Date(time.dateTime);
        if (!date || isNaN(date)) return;
        // The relative words change every minute; only their aria-hidden copy does, so the log
        // does not announce the clock.
        setText(time.querySelector(".ago"), ago(date, now));
        setText(time.querySelector(".exact"), date.toLocaleTimeString(pageLanguage, { hour: "2-digit", minute: "2-digit" }));
        time.title = date.toLocaleString(pageLanguage, { dateStyle: "full", timeStyle: "short" });
        const key = dayKey(date);
        if (key === day) return;
        day = key;
        const before = item.previousElementSibling;
        if (before && before.id === `day-${key}`) {
          setText(before.firstElementChild, dayLabel(date, now));
          return;
        }
        const separator = document.createElement("div");
        separator.id = `day-${key}`;
        separator.className = "day";
        const label = document.createElement("span");
        label.textContent = dayLabel(date, now);
        separator.appendChild(label);
        transcript.insertBefore(separator, item);
      });
    }
    stampTimes();
    setInterval(stampTimes, 30000);

    function syncComposer() {
      const status = document.getElementById("status");
      if (!status) return;
      document.querySelectorAll(".expected-seq").forEach((input) => { input.value = status.dataset.seq || "0"; });
      const run = status.dataset.runStatus;
      const button = document.querySelector(".send-form .send-button");
      // A message may be sent while a card waits: the server declines the card with it (docs/widget.md).
      if (button && !button.closest("form").classList.contains("htmx-request")) button.disabled = run === "running";
      const hint = document.getElementById("composer-hint");
      if (hint) {
        const answerable = document.querySelector("#cards form.card");
        const team = document.querySelector("#cards .card.approval.team");
        hint.textContent = run !== "waiting" ? "" : answerable ? "Answer the request above, or send a message instead: it declines the request."
          : team ? "Waiting for the team's approval… A message you send instead withdraws the request."
          : "Waiting for the application… A message you send instead cancels the request.";
      }
    }

    // Messages are only ever appended: add the new ones instead of replacing the log, so screen
    // readers announce just them and nothing the visitor selected or scrolled to moves. A push after
    // the first (data-after) carries only the messages after the head it follows; a whole
    // transcript must begin with the messages shown, else it replaces them.
    function mergeTranscript(current, incoming) {
      const wanted = Array.from(incoming.children);
      if (!("after" in incoming.dataset)) {
        const ids = wanted.map((el) => el.id);
        const known = Array.from(current.children).filter((el) => el.id !== "typing" && !el.classList.contains("day"));
        if (!known.every((el, i) => el.id === ids[i])) return false;
      }
      const typing = document.getElementById("typing");
      const added = [];
      wanted.forEach((el) => {
        if (el.id === "typing" || document.getElementById(el.id)) return;
        current.insertBefore(el, typing);
        added.push(el);
      });
      // Moved in by hand, not swapped by htmx: what they do with htmx (a cited passage's details,
      // the offer of a person) is set up here.
      added.forEach((el) => htmx.process(el));
      // An answer older than what the page shows (an htmx reply overtaken by a push) may add
      // messages, but the typing row is the newer answer's to decide.
      if (Number(incoming.dataset.seq || 0) >= shownSeq()) {
        const wantedTyping = wanted.find((el) => el.id === "typing");
        if (wantedTyping) {
          if (!typing) current.appendChild(wantedTyping);
          else if (current.lastElementChild !== typing) current.appendChild(typing);
        } else if (typing) {
          typing.remove();
        }
      }
      added.filter((el) => el.id.startsWith("message-")).forEach(tellHost); // a receipt is no message of the host's
      if (added.length && !stickToBottom) showNewMessages(true);
      return true;
    }

    function shownSeq() {
      const status = document.getElementById("status");
      return Number((status && status.dataset.seq) || 0);
    }

    function tellHost(el) {
      const bubble = el.querySelector(".bubble");
      toHost("message", {
        message: { id: el.id.replace(/^message-/, ""), role: el.classList.contains("user") ? "user" : "assistant", text: bubble ? bubble.innerText : "" },
      });
    }

    // A conversation this widget just started opens with its first message, and with the reply
    // too when the turn was quicker than the page: tell the host of them once, then drop the
    // marker so a reload does not tell it again.
    const opened = new URL(window.location.href);
    if (assistant && opened.searchParams.get("started") === "1") {
      const transcript = document.getElementById("transcript");
      if (transcript) Array.from(transcript.children).filter((el) => el.id.startsWith("message-")).forEach(tellHost);
      opened.searchParams.delete("started");
      window.history.replaceState(window.history.state, "", opened.pathname + opened.search + opened.hash);
    }

    document.addEventListener("htmx:oobBeforeSwap", (event) => {
      const detail = event.detail;
      const target = detail.target;
      const incoming = detail.fragment && detail.fragment.firstElementChild;
      if (!target || !incoming) return;
      stickToBottom = stickToBottom || nearBottom();
      // A fragment of an older head than the page shows (an htmx reply overtaken by a push) never
      // puts back what a newer one replaced: messages, requests, the offer of a person, facts.
      const older = "seq" in incoming.dataset && Number(incoming.dataset.seq) < shownSeq();
      if (target.id === "transcript") {
        if (mergeTranscript(target, incoming) || older) detail.shouldSwap = false;
      } else if (target.id === "status") {
        // Update the live region in place: a replaced element is not announced. Never back to an
        // older head (an htmx reply can arrive after the push of a later one).
        if (!older) {
          Object.assign(target.dataset, incoming.dataset);
          target.innerHTML = incoming.innerHTML;
        }
        detail.shouldSwap = false;
      } else if (target.id === "cards" && (incoming.dataset.key === target.dataset.key || older)) {
        detail.shouldSwap = false; // the same requests: keep whatever is typed into them
      } else if (target.id === "handoff" && (older || incoming.dataset.key === target.dataset.key)) {
        detail.shouldSwap = false; // the same offer or wait: keep the address being typed
      } else if (target.id === "memory") {
        if (incoming.dataset.key === target.dataset.key || older) {
          detail.shouldSwap = false;
        } else {
          // A cleared or newly remembered fact must not fold up the list the visitor opened.
          const was = target.querySelector("details");
          const now = incoming.querySelector("details");
          if (was && now) now.open = was.open;
        }
      }
    });

    function announce(text) {
      const announcer = document.getElementById("announcer");
      if (!announcer) return;
      announcer.textContent = "";
      // A fresh text node a moment later: screen readers announce a change, not a repeat.
      setTimeout(() => { announcer.textContent = text; }, 50);
    }

    // A request that arrived by itself (not the answer to this visitor's click) takes the focus,
    // at its heading, unless the visitor is in the middle of typing a message.
    function newCard() {
      const card = cards().find((el) => !seenCards.has(cardKey(el)));
      cards().forEach((el) => seenCards.add(cardKey(el)));
      if (!card) return false;
      // The heading takes the focus (it names the request); the form keeps no name of its own,
      // which would repeat its only field's label.
      const title = card.querySelector("h2") || card;
      title.tabIndex = -1;
      announce(`New request: ${title.textContent.trim()}`);
      const active = document.activeElement;
      if (!(active && active.id === "message" && active.value.trim())) title.focus({ preventScroll: true });
      return true;
    }

    function askForEmail() {
      const more = document.querySelector("#handoff details.handoff-more");
      if (more && document.querySelector("#team-status [data-ask-for-email]")) more.open = true;
    }
    document.addEventListener("htmx:afterSettle", (event) => {
      if (event.detail.target && event.detail.target.id === "team-status") askForEmail();
    });
    askForEmail();

    document.addEventListener("htmx:oobAfterSwap", (event) => {
      // htmx sends this to every element the message swapped so far, with this swap's details,
      // and also when the swap was called off (an unchanged or older fragment): act once, on a swap.
      const detail = event.detail;
      if (!detail.shouldSwap || detail.handled) return;
      detail.handled = true;
      const target = detail.target;
      // A request that was not there when the visitor clicked (the one Continue leads to) is new,
      // whichever of the reply and the push brought it.
      const arrived = target && target.id === "cards" && cards().some((el) => !seenCards.has(cardKey(el)));
      if (target && target.id === "cards" && cardInteraction && !arrived) {
        cardInteraction = null;
        cards().forEach((el) => seenCards.add(cardKey(el)));
        const field = document.querySelector("#cards input:not([type=hidden]), #cards button");
        (field || document.getElementById("message") || document.getElementById("cards")).focus({ preventScroll: true });
      } else if (target && target.id === "cards" && newCard()) {
        cardInteraction = null; // what the click led to is here and has the focus; its reply moves nothing
      }
      if (target && target.id === "notices" && target.children.length) target.scrollIntoView({ block: "nearest" });
      // Control changed (asked for a person, went back, was taken): what is said of the team follows,
      // and with nobody there the address for the reply is asked for in the open.
      if (target && target.id === "handoff" && window.htmx) {
        const team = document.getElementById("team-status");
        if (team) htmx.trigger(team, "refresh");
        askForEmail();
      }
    });

    // A push after the first follows the head it names (data-after). When the page shows an older
    // head it missed a push: it asks for the whole state and drops pushes until that comes.
    let resyncing = false;
    document.addEventListener("htmx:wsBeforeMessage", (event) => {
      const message = typeof event.detail.message === "string" ? event.detail.message : "";
      if (!message.includes('<p id="status"')) return; // a draft of the reply in progress
      const after = /<p id="status"[^>]*?\sdata-after="(\d+)"/.exec(message);
      if (!after) {
        resyncing = false; // the whole state
        return;
      }
      if (resyncing || Number(after[1]) > shownSeq()) {
        event.preventDefault();
        if (!resyncing) {
          resyncing = true;
          event.detail.socketWrapper.send("sync");
        }
      }
    });

    function afterUpdate() {
      syncComposer();
      stampTimes();
      if (stickToBottom) scrollToEnd();
    }
    document.addEventListener("htmx:wsAfterMessage", () => {
      clearUnreachable();
      healthy = true;
      failedPolls = 0;
      lastMessageAt = Date.now();
      markLive();
      afterUpdate();
    });
    document.addEventListener("htmx:beforeRequest", (event) => {
      const form = event.detail.elt;
      if (form && form.closest && form.closest("#cards")) cardInteraction = form;
    });
    document.addEventListener("htmx:afterRequest", (event) => {
      const form = event.detail.elt;
      const status = event.detail.xhr.status;
      if (form === cardInteraction) cardInteraction = null; // its reply, if any, is swapped by now (a push may have taken the form away)
      lastReplyAt = Date.now();
      // A request that got no answer at all (htmx sets no `failed` then, only a status of 0).
      if (!status) showProblem(UNREACHABLE, { untilBack: true });
      else if (status < 500) clearUnreachable();
      if (form && form.classList && form.classList.contains("send-form")) {
        if (status >= 200 && status < 300) {
          form.reset();
          drafts.write(conversation, "");
          const textarea = form.querySelector("textarea");
          if (textarea) autosize(textarea);
          stickToBottom = true;
        } else if (!status || status === 409 || status === 429 || status >= 500) {
          offerRetry(form); // what was typed stays in the box
        }
      }
      afterUpdate();
    });

    // The message that did not go, shown as the visitor's bubble marked "Not sent", with Retry; its
    // text also stays in the box to edit.
    function offerRetry(form) {
      const notices = document.getElementById("notices");
      if (!notices) return;
      if (!notices.children.length) showProblem("Your message was not sent.");
      const textarea = form.querySelector("textarea");
      const unsent = document.createElement("div");
      unsent.className = "message user unsent";
      const bubble = document.createElement("div");
      bubble.className = "bubble";
      bubble.textContent = textarea ? textarea.value : "";
      const note = document.createElement("p");
      note.className = "unsent-note";
      note.textContent = "Not sent";
      const retry = document.createElement("button");
      retry.type = "button";
      retry.className = "secondary small retry";
      retry.textContent = "Retry";
      retry.addEventListener("click", () => {
        notices.replaceChildren();
        form.requestSubmit();
      });
      note.appendChild(retry);
      unsent.append(bubble, note);
      notices.appendChild(unsent);
    }

    // "We could not reach the server" is true only until the server answers again: then it goes by
    // itself (an unsent message stays, with its Retry).
    const UNREACHABLE = "We could not reach the server. Check your connection and try again.";
    function clearUnreachable() {
      document.querySelectorAll("#notices .notice[data-until-back]").forEach((el) => el.remove());
    }

    document.addEventListener("htmx:beforeSwap", (event) => {
      if (event.detail.xhr.status >= 500) showProblem("Something went wrong on our side. Please try again.");
    });

    function showProblem(text, { untilBack = false } = {}) {
      const notices = document.getElementById("notices");
      if (!notices) return;
      const p = document.createElement("p");
      p.className = "notice";
      p.setAttribute("role", "alert");
      if (untilBack) p.dataset.untilBack = "1";
      p.textContent = text;
      notices.replaceChildren(p);
    }

    // The ws extension reconnects by itself only after 1006/1011/1012/1013; after any other close
    // (a proxy's 1000 or 1001, the server's 4503 "try again later") the page comes back on its
    // own, with backoff, polling meanwhile. The codes that mean the link is dead stop it.
    const GONE_FOR_GOOD = [4401, 4403, 4404];
    const EXTENSION_RECONNECTS = [1006, 1011, 1012, 1013];
    let laterTries = 0; // reconnects this page made since the socket was last open, for the backoff
    document.addEventListener("htmx:wsOpen", (event) => {
      laterTries = 0;
      socket = event.detail.socketWrapper;
      main.dataset.wsOpen = "1";
    });
    const socketDown = () => {
      healthy = false;
      socket = null;
      delete main.dataset.wsOpen;
      markLive();
    };
    document.addEventListener("htmx:wsClose", (event) => {
      socketDown();
      const code = event.detail.event && event.detail.event.code;
      if (GONE_FOR_GOOD.includes(code)) linkRevoked();
      if (!GONE_FOR_GOOD.includes(code) && !EXTENSION_RECONNECTS.includes(code) && event.detail.socketWrapper) {
        const delay = Math.min(2000 * 2 ** laterTries, 15000) * (0.5 + Math.random() / 2);
        laterTries += 1;
        setTimeout(() => event.detail.socketWrapper.reconnect(), delay);
      }
    });
    document.addEventListener("htmx:wsError", socketDown);

    // The link's token was revoked or expired: nothing will arrive any more, so say so and stop.
    let revoked = false;
    function linkRevoked() {
      if (revoked) return;
      revoked = true;
      showProblem(LINK_INVALID);
      main.querySelectorAll("#composer textarea, #composer button, #cards button").forEach((el) => { el.disabled = true; });
      markLive();
    }

    async function poll() {
      if (polling) return;
      polling = true;
      try {
        const headers = { "HX-Request": "true" };
        if (lastEtag) headers["If-None-Match"] = lastEtag;
        const response = await fetch(main.dataset.liveUrl, { headers: headers, cache: "no-store", credentials: "omit" });
        if ([401, 403, 404].includes(response.status)) linkRevoked();
        failedPolls = response.status >= 500 ? failedPolls + 1 : 0;
        if (response.status === 200) {
          lastEtag = response.headers.get("ETag");
          htmx.swap(document.body, await response.text(), { swapStyle: "none" });
          afterUpdate();
        }
      } catch (e) {
        failedPolls += 1; // no answer at all: the next tick retries
      } finally {
        polling = false;
        markLive();
      }
    }

    // One clock for both paths: poll while the socket is not delivering; on a quiet socket ask
    // for a resync now and then, and treat silence as a broken socket (some proxies swallow them).
    function working() {
      const status = document.getElementById("status");
      return Boolean(status) && status.dataset.runStatus === "running";
    }
    function tick() {
      const quiet = Date.now() - lastMessageAt > HEARTBEAT_MS ||
        (working() && Date.now() - Math.max(lastMessageAt, lastReplyAt) > WORKING_HEARTBEAT_MS);
      if (healthy && socket && quiet) {
        if (syncSentAt <= lastMessageAt) {
          syncSentAt = Date.now();
          socket.send("sync");
        } else if (Date.now() - syncSentAt > HEARTBEAT_GRACE_MS) {
          healthy = false;
          markLive();
        }
      }
      if (!healthy && !revoked) poll();
    }
    setInterval(tick, POLL_MS);
    markLive();
    syncComposer();
  }

  document.addEventListener("DOMContentLoaded", () => {
    applyAccent(embedRoot());
    const start = document.getElementById("widget-start");
    if (start) startPage(start);
    const main = document.getElementById("conversation");
    if (main) conversationPage(main);
  });
})();
