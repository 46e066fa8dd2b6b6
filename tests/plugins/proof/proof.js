// The proof plugin's page code (tests/plugins/proof/__init__.py): a classic script that its role's
// page loads once (Tab.scripts). It relies on the item-form contract (docs/development.md, "A
// protocol's page code"): the page says `tradlab:item` on each new item's form, the answer is the
// form's named fields (the spans: the hidden field `spans`, JSON), a field set by a script says
// `change` so that the draft is kept and a refusal's mark goes.
(function () {
  'use strict';
  let picking = null;  // the drag under way: {form, from, to}

  function charsOf(form) { return Array.from(form.querySelector('.proof-target').dataset.text || ''); }
  function spansOf(form) {
    try {
      const v = JSON.parse(form.elements.spans.value || '[]');
      return Array.isArray(v) ? v : [];
    } catch (e) { return []; }
  }
  function paint(form, spans) {
    const marks = form.querySelectorAll('.proof-ch');
    marks.forEach(c => c.classList.remove('proof-minor', 'proof-major', 'proof-picking'));
    spans.forEach(s => {
      for (let i = s.start; i < s.end && i < marks.length; i++) marks[i].classList.add('proof-' + s.severity);
    });
    const chars = charsOf(form), list = form.querySelector('.proof-list');
    list.textContent = '';
    spans.forEach((s, k) => {
      const li = document.createElement('li');
      li.textContent = s.severity + ' ' + s.start + '-' + s.end + ' "' + chars.slice(s.start, s.end).join('') + '" ';
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'proof-remove';
      remove.dataset.remove = String(k);
      remove.textContent = 'Remove';
      li.appendChild(remove);
      list.appendChild(li);
    });
  }
  function write(form, spans) {
    const field = form.elements.spans;
    field.value = JSON.stringify(spans);
    field.dispatchEvent(new Event('change', {bubbles: true}));  // the draft, the refusal's mark
    paint(form, spans);
  }
  // the sentence as one element per character (code points, as the server counts them)
  function render(form) {
    const target = form.querySelector('.proof-target');
    if (!target) return;
    target.textContent = '';
    charsOf(form).forEach((ch, i) => {
      const c = document.createElement('span');
      c.className = 'proof-ch';
      c.dataset.i = String(i);
      c.textContent = ch;
      target.appendChild(c);
    });
    paint(form, spansOf(form));
  }
  function charAt(x, y) {
    const el = document.elementFromPoint(x, y);
    return el && el.classList.contains('proof-ch') ? el : null;
  }
  function showPick() {
    const {form, from, to} = picking;
    const lo = Math.min(from, to), hi = Math.max(from, to);
    form.querySelectorAll('.proof-ch').forEach((c, i) => c.classList.toggle('proof-picking', i >= lo && i <= hi));
  }

  document.addEventListener('tradlab:item', (e) => {
    if (e.target.classList.contains('proof-item')) render(e.target);
  });
  document.addEventListener('pointerdown', (e) => {
    const c = e.target.closest && e.target.closest('.proof-ch');
    if (!c || e.button !== 0) return;
    e.preventDefault();  // a drag marks characters, it selects no text
    const i = Number(c.dataset.i);
    picking = {form: c.closest('form'), from: i, to: i};
    showPick();
  });
  document.addEventListener('pointermove', (e) => {
    if (!picking) return;
    const c = charAt(e.clientX, e.clientY);
    if (c && c.closest('form') === picking.form) {
      picking.to = Number(c.dataset.i);
      showPick();
    }
  });
  document.addEventListener('pointerup', () => {
    if (!picking) return;
    const {form, from, to} = picking;
    picking = null;
    const checked = form.querySelector('input[name=severity]:checked');
    const span = {start: Math.min(from, to), end: Math.max(from, to) + 1, severity: checked ? checked.value : 'minor'};
    write(form, spansOf(form).concat([span]).sort((a, b) => a.start - b.start || a.end - b.end));
  });
  document.addEventListener('click', (e) => {
    const b = e.target.closest && e.target.closest('.proof-remove');
    if (!b) return;
    const form = b.closest('form');
    write(form, spansOf(form).filter((s, k) => k !== Number(b.dataset.remove)));
  });
  // an item rendered before this script ran
  document.querySelectorAll('form.proof-item').forEach(render);
})();
