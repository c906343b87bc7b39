// memfs web: the page works without this script. It adds two things:
// - live updates: a timeline with data-live follows the server's event stream and puts
//   each new operation's row (HTML rendered by the server) at the top, and an
//   operation that grew in its row's place, without a reload;
// - confirmations: a form with data-confirm asks once more before it is sent.
"use strict";

function follow(table) {
  const body = table.querySelector("tbody");
  const status = document.querySelector(".live-status");
  const source = new EventSource(table.dataset.live);
  source.addEventListener("op", (event) => {
    const holder = document.createElement("tbody");
    holder.innerHTML = event.data;
    const row = holder.firstElementChild;
    if (!row) return;
    // An operation that grew (a burst through a mount goes on) takes its row's place.
    const shown = body.querySelector(`tr[data-id="${row.dataset.id}"]`);
    if (shown) { shown.replaceWith(row); return; }
    const empty = body.querySelector("tr.empty");
    if (empty) empty.remove();
    body.prepend(row);
    if (status) {
      status.hidden = false;
      status.textContent = "New operation: " + row.textContent.replace(/\s+/g, " ").trim();
    }
  });
  source.addEventListener("error", () => {
    // The browser reconnects by itself; nothing to do but say so.
    if (status) { status.hidden = false; status.textContent = "Live updates paused; reconnecting."; }
  });
  table.dataset.following = "1";
}

document.addEventListener("DOMContentLoaded", () => {
  const table = document.querySelector("table[data-live]");
  if (table && window.EventSource) follow(table);
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
});
