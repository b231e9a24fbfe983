/*
 * Waypoint embed: one async <script> on any site adds a launcher button and the chat iframe.
 *
 *   <script>window.Waypoint=window.Waypoint||function(){(Waypoint.q=Waypoint.q||[]).push(arguments)};</script>
 *   <script async src="https://chat.example.com/static/waypoint/embed.js"
 *           data-assistant="<assistant id>" data-position="right" data-color="#0b5cad"></script>
 *
 * Commands (buffered until this file has loaded): Waypoint('open'|'close'|'toggle'),
 * Waypoint('on', 'ready'|'message'|'open'|'close'|'error', callback), Waypoint('off', event, callback),
 * Waypoint('identify', identityToken). See docs/widget.md.
 *
 * Messages to and from the iframe use the exact widget origin as target and are accepted only from
 * that origin and that iframe's window.
 */
(function () {
  "use strict";
  if (window.Waypoint && window.Waypoint.loaded) return;

  var script = document.currentScript || document.querySelector('script[data-assistant][src*="/static/waypoint/embed.js"]');
  if (!script) return;
  var assistant = script.getAttribute("data-assistant") || "";
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(assistant)) {
    if (window.console) console.error("Waypoint: data-assistant must be an assistant id");
    return;
  }
  var widgetOrigin = new URL(script.src, window.location.href).origin;
  var side = script.getAttribute("data-position") === "left" ? "left" : "right";
  var color = /^#[0-9a-fA-F]{6}$/.test(script.getAttribute("data-color") || "") ? script.getAttribute("data-color") : "#0b5cad";
  var identity = script.getAttribute("data-identity") || "";
  var OPEN_KEY = "waypoint:open:" + assistant;
  // Only used when the iframe may not use its own storage (third-party storage blocked).
  var KEPT_KEY = "waypoint:conversation:" + assistant;
  var DRAFT_KEY = "waypoint:draft:" + assistant; // only for a frame denied its own storage
  var Z = "2147483000";

  var listeners = {};
  var launcher, panel, iframe, badge;
  var isOpen = false;
  var ready = null; // the first ready message's detail, once the iframe has said it
  var unread = 0;
  var small = window.matchMedia("(max-width: 480px)");
  var hostOverflow = null; // the host page's own overflow styles while the full-screen chat holds them

  function emit(name, detail) {
    (listeners[name] || []).slice().forEach(function (callback) {
      try { callback(detail); } catch (e) { if (window.console) console.error(e); }
    });
  }

  function readableOn(hex) {
    var c = [1, 3, 5].map(function (i) {
      var v = parseInt(hex.slice(i, i + 2), 16) / 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    var l = 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
    return 1.05 / (l + 0.05) >= (l + 0.05) / 0.05 ? "#ffffff" : "#111111";
  }

  function kept() {
    try { return JSON.parse(window.localStorage.getItem(KEPT_KEY) || "null"); } catch (e) { return null; }
  }

  function frameUrl() {
    var query = new URLSearchParams({ host: window.location.origin, color: color });
    if (identity) query.set("identity", identity);
    var record = kept();
    var fragment = record ? "#" + new URLSearchParams({ conversation: record.conversation_id, token: record.token, who: record.who || "" }) : "";
    return widgetOrigin + "/w/" + assistant + "?" + query.toString() + fragment;
  }

  function css(el, styles) {
    Object.keys(styles).forEach(function (k) { el.style.setProperty(k, styles[k]); });
  }

  function svg(path) {
    var ns = "http://www.w3.org/2000/svg";
    var icon = document.createElementNS(ns, "svg");
    icon.setAttribute("viewBox", "0 0 24 24");
    icon.setAttribute("width", "26");
    icon.setAttribute("height", "26");
    icon.setAttribute("aria-hidden", "true");
    icon.setAttribute("focusable", "false");
    var p = document.createElementNS(ns, "path");
    p.setAttribute("d", path);
    p.setAttribute("fill", "currentColor");
    icon.appendChild(p);
    return icon;
  }

  var CHAT = "M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z";
  var CLOSE = "M6.4 5 12 10.6 17.6 5 19 6.4 13.4 12l5.6 5.6-1.4 1.4-5.6-5.6L6.4 19 5 17.6l5.6-5.6L5 6.4z";

  function build() {
    launcher = document.createElement("button");
    launcher.type = "button";
    launcher.className = "waypoint-launcher";
    launcher.setAttribute("aria-controls", "waypoint-panel");
    css(launcher, {
      position: "fixed", bottom: "20px", width: "56px", height: "56px", padding: "0", border: "0",
      "border-radius": "50%", background: color, color: readableOn(color), cursor: "pointer", "z-index": Z,
      display: "flex", "align-items": "center", "justify-content": "center",
      "box-shadow": "0 4px 14px rgba(0,0,0,.25)", transition: "transform .15s ease",
    });
    launcher.style.setProperty(side, "20px");
    launcher.appendChild(svg(CHAT));
    badge = document.createElement("span");
    badge.setAttribute("aria-hidden", "true");
    css(badge, {
      position: "absolute", top: "-2px", right: "-2px", "min-width": "20px", height: "20px", padding: "0 5px",
      "border-radius": "10px", background: "#b42318", color: "#fff", font: "600 12px/20px system-ui, sans-serif",
      display: "none", "box-sizing": "border-box", "text-align": "center",
    });
    launcher.appendChild(badge);
    launcher.addEventListener("click", toggle);

    panel = document.createElement("div");
    panel.id = "waypoint-panel";
    css(panel, {
      position: "fixed", "z-index": Z, display: "none", overflow: "hidden", background: "#fff",
      "box-shadow": "0 12px 40px rgba(0,0,0,.28)",
    });
    iframe = document.createElement("iframe");
    iframe.title = "Chat";
    iframe.src = frameUrl();
    iframe.setAttribute("allow", "clipboard-write");
    css(iframe, { width: "100%", height: "100%", border: "0", display: "block" });
    panel.appendChild(iframe);

    document.body.appendChild(panel);
    document.body.appendChild(launcher);
    layout();
    if (small.addEventListener) small.addEventListener("change", layout);
    renderLauncher();
  }

  function layout() {
    if (small.matches) {
      css(panel, { top: "0", bottom: "0", left: "0", right: "0", width: "100%", height: "100%", "border-radius": "0" });
    } else {
      css(panel, { top: "auto", bottom: "88px", width: "380px", height: "min(640px, calc(100vh - 108px))", "border-radius": "16px" });
      panel.style.setProperty(side, "20px");
      panel.style.setProperty(side === "right" ? "left" : "right", "auto");
    }
    // Full screen on a phone: the chat's own close button (and Esc) closes it.
    launcher.style.display = small.matches && isOpen ? "none" : "flex";
    holdHostScroll(small.matches && isOpen);
  }

  // Behind a full-screen chat the host page must not scroll (a swipe past the transcript's end
  // would move it); its own overflow styles come back when the chat closes or the screen widens.
  function holdHostScroll(hold) {
    var root = document.documentElement;
    if (hold && !hostOverflow) {
      hostOverflow = { root: root.style.getPropertyValue("overflow"), body: document.body.style.getPropertyValue("overflow") };
      root.style.setProperty("overflow", "hidden");
      document.body.style.setProperty("overflow", "hidden");
    } else if (!hold && hostOverflow) {
      root.style.setProperty("overflow", hostOverflow.root);
      document.body.style.setProperty("overflow", hostOverflow.body);
      hostOverflow = null;
    }
  }

  function renderLauncher() {
    launcher.replaceChild(svg(isOpen ? CLOSE : CHAT), launcher.firstChild);
    launcher.setAttribute("aria-label", isOpen ? "Close chat" : unread ? "Open chat, " + unread + " new" : "Open chat");
    launcher.setAttribute("aria-expanded", isOpen ? "true" : "false");
    badge.textContent = String(unread);
    badge.style.display = unread && !isOpen ? "block" : "none";
  }

  function post(type, detail) {
    var message = { source: "waypoint-host", type: type };
    for (var key in detail || {}) message[key] = detail[key];
    if (iframe && iframe.contentWindow) iframe.contentWindow.postMessage(message, widgetOrigin);
  }

  // The draft of a widget frame denied its own storage: kept here, per tab, for its conversation.
  function keptDraft(conversationId) {
    try {
      var kept = JSON.parse(window.sessionStorage.getItem(DRAFT_KEY) || "null");
      return kept && kept.conversation_id === conversationId ? String(kept.text || "") : "";
    } catch (e) {
      return "";
    }
  }

  function open(options) {
    if (!panel) return;
    var focus = !options || options.focus !== false;
    isOpen = true;
    unread = 0;
    panel.style.display = "block";
    layout();
    renderLauncher();
    try { window.sessionStorage.setItem(OPEN_KEY, "1"); } catch (e) { /* storage blocked */ }
    if (focus) {
      iframe.focus();
      post("open");
    }
    emit("open");
  }

  function close() {
    if (!panel || !isOpen) return;
    var hadFocus = document.activeElement === iframe;
    isOpen = false;
    panel.style.display = "none";
    layout();
    renderLauncher();
    try { window.sessionStorage.removeItem(OPEN_KEY); } catch (e) { /* storage blocked */ }
    if (hadFocus || small.matches) launcher.focus();
    post("close");
    emit("close");
  }

  function toggle() {
    if (isOpen) close(); else open();
  }

  window.addEventListener("message", function (event) {
    if (event.origin !== widgetOrigin || !iframe || event.source !== iframe.contentWindow) return;
    var data = event.data;
    if (!data || data.source !== "waypoint") return;
    if (data.type === "ready") {
      if (!ready) {
        ready = { conversationId: data.conversation_id || null };
        emit("ready", ready);
      }
      if (isOpen && document.activeElement === iframe) post("open");
      var draft = data.conversation_id ? keptDraft(data.conversation_id) : "";
      if (draft) post("draft", { text: draft });
    } else if (data.type === "draft" && typeof data.conversation_id === "string") {
      try {
        if (data.text) window.sessionStorage.setItem(DRAFT_KEY, JSON.stringify({ conversation_id: data.conversation_id, text: String(data.text) }));
        else window.sessionStorage.removeItem(DRAFT_KEY);
      } catch (e) { /* storage blocked here too: the draft is simply not kept */ }
    } else if (data.type === "message" && data.message) {
      if (!isOpen && data.message.role === "assistant") {
        unread += 1;
        renderLauncher();
      }
      emit("message", data.message);
    } else if (data.type === "close") {
      close();
    } else if (data.type === "store" && data.conversation && typeof data.conversation.conversation_id === "string") {
      var record = { conversation_id: data.conversation.conversation_id, token: String(data.conversation.token || ""), who: String(data.conversation.who || "") };
      try { window.localStorage.setItem(KEPT_KEY, JSON.stringify(record)); } catch (e) { /* storage blocked here too */ }
    } else if (data.type === "forget") {
      try { window.localStorage.removeItem(KEPT_KEY); } catch (e) { /* storage blocked here too */ }
    } else if (data.type === "error") {
      if (window.console) console.warn("Waypoint: " + (data.message || data.code));
      emit("error", { code: data.code, message: data.message });
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && isOpen) close();
  });

  function command(name, a, b) {
    if (name === "open") open();
    else if (name === "close") close();
    else if (name === "toggle") toggle();
    else if (name === "on" && typeof b === "function") {
      (listeners[a] = listeners[a] || []).push(b);
      if (a === "ready" && ready) b(ready);
    } else if (name === "off") {
      listeners[a] = (listeners[a] || []).filter(function (f) { return f !== b; });
    } else if (name === "identify") {
      identity = a || "";
      if (iframe) iframe.src = frameUrl();
    } else if (window.console) {
      console.warn("Waypoint: unknown command " + name);
    }
  }

  var queued = (window.Waypoint && window.Waypoint.q) || [];
  // An identity queued before this file loaded belongs in the iframe's first URL.
  queued.forEach(function (args) { if (args[0] === "identify") identity = args[1] || ""; });
  window.Waypoint = function () { command.apply(null, arguments); };
  window.Waypoint.loaded = true;

  function boot() {
    build();
    var wasOpen = false;
    try { wasOpen = window.sessionStorage.getItem(OPEN_KEY) === "1"; } catch (e) { /* storage blocked */ }
    if (wasOpen) open({ focus: false });
    queued.forEach(function (args) { if (args[0] !== "identify") command.apply(null, args); });
  }
  if (document.body) boot(); else document.addEventListener("DOMContentLoaded", boot);
})();
