// The explorer's little script: confirm a re-drive, and refresh the index banner.
document.addEventListener("submit", (event) => {
  const button = event.submitter;
  const question = button && button.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});

(function watchIndex() {
  const banner = document.getElementById("status");
  if (!banner || banner.dataset.indexed === "yes") return;
  const poll = () => fetch("/api/status", {credentials: "same-origin"})
    .then((r) => r.json())
    .then((s) => {
      if (s.indexed && !s.error) { window.location.reload(); return; }
      banner.textContent = s.error
        ? "The journal could not be read on the last try: " + s.error + " (trying again)."
        : "Indexing the journal: " + s.records_indexed + " records so far; this page shows what is indexed.";
      setTimeout(poll, 1000);
    })
    .catch(() => setTimeout(poll, 3000));
  setTimeout(poll, 1000);
})();
