() => { document.addEventListener('keydown', (e) => {
  if (e.key !== 'Enter' || e.shiftKey || e.ctrlKey || e.altKey || e.metaKey || e.isComposing) return;
  const t = e.target;
  if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'BUTTON' || t.tagName === 'SELECT' ||
      (t.tagName === 'INPUT' && !['range', 'radio', 'checkbox'].includes(t.type)))) return;
  const btn = [...document.querySelectorAll('.submit-btn button, button.submit-btn')]
    .find(b => b.offsetParent !== null);
  if (btn) { e.preventDefault(); btn.click(); }
});
// a copy button (tabs/common.py copy_button): the Clipboard API where the page is a secure
// context, else the selection and execCommand (a plain-http study server on a LAN)
document.addEventListener('click', async (e) => {
  const b = e.target.closest && e.target.closest('button.copy-btn[data-copy]');
  if (!b) return;
  const text = b.dataset.copy;
  let ok = false;
  try { await navigator.clipboard.writeText(text); ok = true; } catch (err) {
    const t = document.createElement('textarea');
    t.value = text; t.setAttribute('readonly', ''); t.style.position = 'fixed'; t.style.opacity = '0';
    document.body.appendChild(t); t.select();
    try { ok = document.execCommand('copy'); } catch (err2) { ok = false; }
    t.remove();
  }
  b.textContent = ok ? b.dataset.copied : (b.dataset.failed || b.textContent);
  b.classList.toggle('copied', ok);
}); }
