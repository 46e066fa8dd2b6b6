const moved = new Set();
// the participant's link: its token, or on a Prolific link the participant's and study's ids
const params = new URLSearchParams(window.location.search);
const who = params.get('t') || [params.get('PROLIFIC_PID'), params.get('STUDY_ID')].filter(Boolean).join(':');
const prefix = 'tradlab-draft:' + window.location.pathname + ':' + who + ':';
function draftKey() {
  const id = props.value && props.value.item_id;
  return who && id ? prefix + id : null;
}
function store(fn) { try { return fn(window.localStorage); } catch (e) { return null; } }  // storage may be off
function fieldsOf(form) {
  const answer = {};
  for (const el of form.elements) {
    if (!el.name) continue;
    if (el.type === 'checkbox') answer[el.name] = el.checked;
    else if (el.type === 'radio') {
      if (el.checked) answer[el.name] = el.value; else if (!(el.name in answer)) answer[el.name] = null;
    }
    else if (el.type === 'range') answer[el.name] = moved.has(el.name) ? Number(el.value) : null;
    else answer[el.name] = el.value;
  }
  return answer;
}
function saveDraft(form) {
  const key = draftKey();
  if (!key) return;
  const a = fieldsOf(form);
  const typed = Object.values(a).some(v => typeof v === 'string' ? v.trim() !== '' : v !== null && v !== false);
  store(s => typed ? s.setItem(key, JSON.stringify(a)) : s.removeItem(key));
}
function restoreDraft(form) {
  const key = draftKey();
  let draft = null;
  try { draft = JSON.parse(store(s => s.getItem(key)) || 'null'); } catch (e) { draft = null; }
  // drafts of this link's other items are of items already sent (items come in order)
  store(s => Object.keys(s).filter(k => k.startsWith(prefix) && k !== key).forEach(k => s.removeItem(k)));
  if (!draft || typeof draft !== 'object') return;
  for (const el of form.elements) {
    if (!el.name || !(el.name in draft) || el.disabled) continue;
    const v = draft[el.name];
    if (el.type === 'checkbox') el.checked = v === true;
    else if (el.type === 'radio') el.checked = v !== null && el.value === String(v);
    else if (el.type === 'range') {
      if (typeof v !== 'number') continue;
      el.value = v;
      moved.add(el.name);
      el.classList.add('moved');
      const o = form.querySelector('output[for="' + el.id + '"]');
      if (o) o.textContent = el.value;
    }
    else if (typeof v === 'string') el.value = v;
  }
}
function viaGradio(answer) {      // the tab's Gradio event: the same service and checks
  props.value = {...props.value, answer};
  trigger('submit');
}
function send(form) {
  if (form.dataset.sending) return;
  form.dataset.sending = '1';
  const btn = form.querySelector('button[type=submit]');
  if (btn) btn.disabled = true;
  const answer = fieldsOf(form), v = props.value || {};
  if (!v.form || !v.token || !window.fetch) return viaGradio(answer);
  // the page's own JSON route (web/form_routes.py), one POST; anything but its answer (an old
  // server, a proxy that drops the path, a network error) goes the Gradio way, and an answer
  // saved twice is saved once (the services' submits are idempotent)
  fetch(window.location.pathname.replace(/\/?$/, '/') + 'form/' + v.form + '/submit', {
    method: 'POST', headers: {'content-type': 'application/json'}, credentials: 'same-origin',
    body: JSON.stringify({token: v.token, value: {item_id: v.item_id, answer}}),
  }).then(r => r.ok ? r.json() : Promise.reject(new Error('HTTP ' + r.status)))
    .then(out => {
      if (!out || typeof out.value !== 'object') throw new Error('no form value');
      // a value set here is no server update: watch() stays quiet, and the component writes
      // the new HTML in a microtask it queues now, so shown() goes in the one after it
      props.value = out.value;
      queueMicrotask(() => {
        shown();
        // the end of the tab's items or a wait: the tab's other parts (its waiting timer, a
        // feedback box, a Prolific redirect) come from the Gradio event that shows it afresh
        if (out.value.status !== 'item') trigger('edit');
      });
    })
    .catch(() => viaGradio(answer));
}
// a refused field's box: its question, its choice group, its scale row or its slider
function boxOf(el) { return el.closest('li, fieldset, .sd-row, .form-slider') || el; }
// the inputs of a field the service names: by their name, or their data-field where that differs
function inputsOf(root, name) {
  return [...root.querySelectorAll('[name]')].filter(x => x.name === name || x.dataset.field === name);
}
function unmark(root) {
  root.querySelectorAll('.field-error').forEach(x => x.remove());
  [root, ...root.querySelectorAll('.field-invalid')].forEach(x => x.classList.remove('field-invalid'));
  root.querySelectorAll('[aria-invalid]').forEach(x => {
    x.removeAttribute('aria-invalid');
    x.removeAttribute('aria-describedby');
  });
}
function clearMark(box) {
  unmark(box);
  // the message keeps the words of the fields still wrong (a field not in the form stays named)
  element.querySelectorAll('.msg.error[data-fields]').forEach(err => {
    let fields = {};
    try { fields = JSON.parse(err.dataset.fields); } catch (e) { return; }
    const left = Object.entries(fields).filter(([name]) => {
      const els = inputsOf(element, name);
      return !els.length || els.some(x => x.getAttribute('aria-invalid') === 'true');
    });
    if (!left.length) err.remove();
    else err.textContent = [...new Set(left.map(([, words]) => words))].join(' ');
  });
}
function markFields(form) {
  const err = element.querySelector('.msg.error[data-fields]');
  if (!err) return null;
  let fields = {};
  try { fields = JSON.parse(err.dataset.fields); } catch (e) { return null; }
  for (const [name, words] of Object.entries(fields)) {
    const els = inputsOf(form, name);
    if (!els.length) continue;
    const box = boxOf(els[0]);
    box.classList.add('field-invalid');
    const note = document.createElement('p');
    note.className = 'field-error';
    note.id = 'error-' + name.replace(/[^A-Za-z0-9_-]/g, '_');
    note.textContent = words;
    box.appendChild(note);
    els.forEach(x => { x.setAttribute('aria-invalid', 'true'); x.setAttribute('aria-describedby', note.id); });
  }
  return form.querySelector('[aria-invalid=true]');
}
element.addEventListener('submit', (e) => { e.preventDefault(); send(e.target); });
function edited(e) {
  const t = e.target;
  if (!t.form || !t.name) return;
  saveDraft(t.form);
  const box = t.closest('.field-invalid');
  // a mark goes once its field is answered: text typed, a box ticked, a point chosen, a slider moved
  if (box && (t.type === 'textarea' ? t.value.trim() !== '' : t.type === 'checkbox' ? t.checked : true)) clearMark(box);
}
element.addEventListener('input', (e) => {
  if (e.target.type === 'range') {
    moved.add(e.target.name);
    e.target.classList.add('moved');
    const out = element.querySelector('output[for="' + e.target.id + '"]');
    if (out) out.textContent = e.target.value;
    element.querySelectorAll('.msg.error[data-key="score_missing"]').forEach(x => x.remove());
  }
  edited(e);
});
element.addEventListener('change', edited);
// a click on an unmoved slider at the value it shows fires no input event, yet is a choice
// (data-click-sets: the semantic differential's sliders start in the middle, the validator's and
// DA's at 0, where a click on the track's start is a score of 0)
element.addEventListener('pointerup', (e) => {
  const t = e.target;
  if (t.type === 'range' && 'clickSets' in t.dataset && !t.disabled && !moved.has(t.name))
    t.dispatchEvent(new Event('input', {bubbles: true}));
});
element.addEventListener('keydown', (e) => {
  if (e.key !== 'Enter' || e.shiftKey || e.ctrlKey || e.altKey || e.metaKey || e.isComposing) return;
  const t = e.target;
  if (!t.form || !['range', 'radio', 'checkbox'].includes(t.type)) return;
  e.preventDefault();
  send(t.form);
});
element.addEventListener('ended', (e) => {
  element.querySelectorAll('[data-unlock-on-ended]').forEach(x => { x.disabled = false; });
}, true);
// leaving with an unsent draft asks first (the draft is kept either way)
window.addEventListener('beforeunload', (e) => {
  const form = element.querySelector('form');
  const key = draftKey();
  if (!form || form.dataset.sending || !key || !store(s => s.getItem(key))) return;
  e.preventDefault();
  e.returnValue = '';
});
function shown() {
  moved.clear();
  const form = element.querySelector('form');
  if (!form) {
    // the end or a wait: every item of this link is sent, so no draft is left
    if (props.value && ['complete', 'waiting'].includes(props.value.status))
      store(s => Object.keys(s).filter(k => k.startsWith(prefix)).forEach(k => s.removeItem(k)));
    return;
  }
  // the page patches the DOM in place: a kept input would keep the last item's value, so each
  // item starts from the values the server wrote (a refused answer comes back written in)
  form.reset();
  delete form.dataset.sending;
  const btn = form.querySelector('button[type=submit]');
  if (btn) btn.disabled = false;
  form.querySelectorAll('[data-unlock-on-ended]').forEach(x => { x.disabled = true; });
  form.querySelectorAll('output').forEach(o => { o.textContent = o.dataset.empty || '–'; });
  unmark(form);
  form.querySelectorAll('input[type=range]').forEach(x => x.classList.remove('moved'));
  // a refused answer's score comes back written in and counts as moved
  form.querySelectorAll('input[type=range][data-moved]').forEach(x => {
    moved.add(x.name);
    x.classList.add('moved');
    const o = form.querySelector('output[for="' + x.id + '"]');
    if (o) o.textContent = x.value;
  });
  restoreDraft(form);
  const invalid = markFields(form);
  // a protocol's own page script (Tab.scripts) attaches to the new item here: the form's fields
  // hold the values shown (the server's, a refused answer's, the draft's), the refusal is marked
  const v = props.value || {};
  form.dispatchEvent(new CustomEvent('tradlab:item', {bubbles: true, detail: {
    form, itemId: v.item_id, status: v.status, refused: !!invalid || !!element.querySelector('.msg.error')}}));
  if (invalid) {      // a refusal: the first field it names, in view (a hidden field: its box's first input)
    const box = boxOf(invalid);
    const shownField = invalid.type === 'hidden' ?
      box.querySelector('[tabindex], input:not([type=hidden]), textarea, select, button') || box : invalid;
    shownField.focus({preventScroll: true});
    shownField.scrollIntoView({block: 'center'});
    return;
  }
  const top = element.getBoundingClientRect().top;
  if (top < 0 || top > window.innerHeight * 0.5) element.scrollIntoView({block: 'start'});
  // the first input, or on a page that only reads (an instruction page) its button: Enter goes on
  const first = form.querySelector(
    'input:not([type=hidden]):not(:disabled), textarea:not(:disabled), select:not(:disabled)') ||
    form.querySelector('button[type=submit]');
  if (first) first.focus({preventScroll: true});
}
watch('value', shown);
shown();
