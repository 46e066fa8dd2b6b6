() => {
  if (window.tradlabLocalTimes) { window.tradlabLocalTimes(); return; }
  const ISO = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;
  const pad = (n) => String(n).padStart(2, "0");
  const zone = (d) => (new Intl.DateTimeFormat(undefined, {timeZoneName: "short"}).formatToParts(d)
    .find((p) => p.type === "timeZoneName") || {value: ""}).value;
  const local = (iso) => {
    const d = new Date(iso);
    if (isNaN(d)) return null;
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
           `${pad(d.getHours())}:${pad(d.getMinutes())} ${zone(d)}`.trim();
  };
  const fix = (root) => {
    if (!root || !root.querySelectorAll) return;
    root.querySelectorAll("time[datetime]").forEach((t) => {
      const shown = local(t.getAttribute("datetime"));
      if (shown && t.textContent !== shown) { t.textContent = shown; t.title = t.getAttribute("datetime"); }
    });
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const found = [];
    while (walk.nextNode()) if (ISO.test(walk.currentNode.data.trim())) found.push(walk.currentNode);
    found.forEach((node) => {
      const iso = node.data.trim(), shown = local(iso);
      if (!shown) return;
      node.data = shown;
      if (node.parentElement) node.parentElement.title = iso;
    });
  };
  const panel = () => document.getElementById("admin-panel");
  window.tradlabLocalTimes = () => fix(panel());
  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; window.tradlabLocalTimes(); });
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
  window.tradlabLocalTimes();
}
