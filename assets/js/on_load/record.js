// the recorder's upload: its download link is /gradio_api/file=<the path on the server>
function uploaded() {
  const a = document.querySelector('#recorder a[data-testid="download-link"]');
  const at = a && a.href ? a.href.indexOf('/gradio_api/file=') : -1;
  if (at < 0) return null;
  try { return decodeURIComponent(new URL(a.href).pathname.split('/gradio_api/file=')[1]); }
  catch (e) { return null; }
}
function clearRecorder() {
  const clear = document.querySelector('#recorder button[aria-label="Clear"]');
  if (clear) clear.click();
}
let sending = false;
function done(btn) { sending = false; btn.disabled = false; }
document.addEventListener('click', (e) => {
  const btn = e.target.closest && e.target.closest('#record-send');
  if (!btn) return;
  e.preventDefault();
  e.stopImmediatePropagation();
  if (sending) return;
  const v = props.value || {}, path = uploaded();
  // the form's Gradio event: on a page without the routes, or with nothing uploaded (it says so)
  if (!v.form || !v.token || !window.fetch || !path) { trigger('submit'); return; }
  sending = true;
  btn.disabled = true;
  fetch(window.location.pathname.replace(/\/?$/, '/') + 'form/' + v.form + '/submit', {
    method: 'POST', headers: {'content-type': 'application/json'}, credentials: 'same-origin',
    body: JSON.stringify({token: v.token, value: {item_id: v.item_id, audio: path}}),
  }).then(r => r.ok ? r.json() : Promise.reject(new Error('HTTP ' + r.status)))
    .then(out => {
      if (!out || typeof out.value !== 'object') throw new Error('no recording value');
      props.value = out.value;
      done(btn);
      clearRecorder();                                   // as the event's answer clears it, refused or not
      window.scrollTo({top: 0});
      // the end: the tab's other parts (the recorder hidden, a Prolific redirect) come from
      // the Gradio event that shows it afresh
      if (out.value.status !== 'item') trigger('edit');
    })
    .catch(() => { done(btn); trigger('submit'); });
}, true);
// leaving with a recording made but not submitted asks first, as the text forms do with a
// draft: the recording is not kept on a reload (issue 51, point 6)
window.addEventListener('beforeunload', (e) => {
  if (sending || !uploaded() || !(props.value || {}).item_id) return;
  e.preventDefault();
  e.returnValue = '';
});
