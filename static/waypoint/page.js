// Conversation page behaviour that htmx attributes cannot express: keyboard sending, form reset,
// and falling back to polling (with ETag) when the websocket cannot connect.
(function () {
  "use strict";
  const POLL_MS = 2000;
  let pollTimer = null;
  let lastEtag = null;

  function root() { return document.getElementById("conversation"); }

  function currentSeq() {
    const status = document.getElementById("status");
    return status ? Number(status.dataset.seq || 0) : 0;
  }

  function syncExpectedSeq() {
    document.querySelectorAll(".expected-seq").forEach((input) => { input.value = String(currentSeq()); });
  }

  async function poll() {
    const main = root();
    if (!main) return;
    try {
      const headers = lastEtag ? { "If-None-Match": lastEtag, "HX-Request": "true" } : { "HX-Request": "true" };
      const response = await fetch(main.dataset.liveUrl, { headers, cache: "no-store" });
      if (response.status === 200) {
        lastEtag = response.headers.get("ETag");
        const html = await response.text();
        htmx.swap(document.body, html, { swapStyle: "none" });
        syncExpectedSeq();
      }
    } catch (e) { /* offline for a moment: the next poll retries */ }
  }

  function startPolling() {
    if (pollTimer) return;
    pollTimer = setInterval(poll, POLL_MS);
    poll();
  }

  function stopPolling() {
    if (pollTimer) { clearInterval(pollTimer); pollTimer = null; }
  }

  document.addEventListener("htmx:wsOpen", () => { stopPolling(); });
  document.addEventListener("htmx:wsClose", startPolling);
  document.addEventListener("htmx:wsError", startPolling);
  document.addEventListener("htmx:afterSettle", syncExpectedSeq);
  document.addEventListener("htmx:oobAfterSwap", syncExpectedSeq);

  document.addEventListener("htmx:afterRequest", (event) => {
    const form = event.target.closest ? event.target.closest("form.send-form") : null;
    if (form && event.detail.successful) form.reset();
  });

  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (target && target.id === "message" && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      const form = target.form;
      if (form && target.value.trim()) form.requestSubmit();
    }
  });

  document.addEventListener("DOMContentLoaded", () => {
    const main = root();
    if (!main) return;
    // If the websocket has not opened shortly after load (blocked, proxy), poll instead.
    setTimeout(() => { if (!main.dataset.wsOpen) startPolling(); }, 3000);
    document.addEventListener("htmx:wsOpen", () => { main.dataset.wsOpen = "1"; });
    document.addEventListener("htmx:wsClose", () => { delete main.dataset.wsOpen; });
  });
})();
