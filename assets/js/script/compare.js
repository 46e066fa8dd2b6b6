// The side-by-side page's code (tabs/compare.py, services/compare/protocol.py): a classic script
// the side-by-side annotator's page loads once (Tab.scripts). It relies on the item-form contract
// (docs/plugins.md, "Its page code"): the page says `tradlab:item` on each new item's form, the
// answer is the form's named fields.
//
// Ranking by order (form[data-mode=rank][data-ranking=order]): the outputs are a list; a drag by
// an output's handle (mouse, pen or finger: pointer events), its Up and Down buttons, or Alt+Up /
// Alt+Down on the focused output moves it; "This order is my ranking" accepts the order as it is.
// Each of these writes the letters best first into the hidden field `ranking` (JSON) and says
// `change`, so that the draft is kept and a refusal's mark goes; until then the field is empty and
// the server refuses the answer (an untouched order is no ranking). A draft or a refused answer's
// ranking comes back in the field, and the list is put in its order again.
//
// Preference with strength: choosing the tie clears and disables the strength.
//
// Recordings (<audio data-clip=KEY>: an output's, ABX's X): each played to its end adds KEY to the
// hidden field `played` (JSON) and says `change`; the server refuses an answer until every one of
// the page's is there, naming the missing. One plays at a time.
(function () {
  'use strict';
  let drag = null;  // {form, li, list}

  function rankForm(el) {
    const form = el && el.closest ? el.closest('form.sxs-item') : null;
    return form && form.dataset.mode === 'rank' && form.dataset.ranking === 'order' ? form : null;
  }
  function listOf(form) { return form.querySelector('.sxs-ranked'); }
  function labelsOf(form) { return Array.from(listOf(form).children).map(li => li.dataset.label); }
  function saved(form) {
    try {
      const v = JSON.parse(form.elements.ranking.value || 'null');
      return Array.isArray(v) ? v : null;
    } catch (e) { return null; }
  }
  function paint(form) {
    const list = listOf(form), done = saved(form);
    const confirmed = !!done && done.join() === labelsOf(form).join();
    Array.from(list.children).forEach((li, i) => {
      li.querySelector('.sxs-place').textContent = (i + 1) + '.';
      li.querySelector('.sxs-up').disabled = i === 0;
      li.querySelector('.sxs-down').disabled = i === list.children.length - 1;
    });
    list.classList.toggle('sxs-confirmed', confirmed);
    form.querySelector('.sxs-rank-note').textContent = confirmed ?
      'Your ranking, best first: ' + labelsOf(form).join(' > ') : 'Order the translations, best first.';
  }
  function commit(form) {
    const field = form.elements.ranking;
    field.value = JSON.stringify(labelsOf(form));
    field.dispatchEvent(new Event('change', {bubbles: true}));
    paint(form);
  }
  function restore(form) {
    const list = listOf(form), done = saved(form);
    if (done) {
      done.forEach(label => {
        const li = list.querySelector('.sxs-output[data-label="' + CSS.escape(String(label)) + '"]');
        if (li) list.appendChild(li);
      });
    }
    paint(form);
  }
  function move(li, step) {
    const form = rankForm(li), list = li.parentElement;
    if (step < 0 && li.previousElementSibling) list.insertBefore(li, li.previousElementSibling);
    else if (step > 0 && li.nextElementSibling) list.insertBefore(li.nextElementSibling, li);
    commit(form);
  }

  document.addEventListener('tradlab:item', (e) => {
    const form = e.detail && e.detail.form;
    if (!form || !form.matches('form.sxs-item')) return;
    if (rankForm(form)) restore(form);
    strengthFollows(form);
  });
  document.addEventListener('click', (e) => {
    const b = e.target.closest && e.target.closest('.sxs-up, .sxs-down, .sxs-confirm');
    const form = b && rankForm(b);
    if (!form) return;
    if (b.classList.contains('sxs-confirm')) commit(form);
    else {
      const li = b.closest('.sxs-output');
      move(li, b.classList.contains('sxs-up') ? -1 : 1);
      (b.disabled ? li : b).focus();
    }
  });
  document.addEventListener('keydown', (e) => {
    const li = e.target.classList && e.target.classList.contains('sxs-output') ? e.target : null;
    if (!li || !rankForm(li) || !e.altKey || !['ArrowUp', 'ArrowDown'].includes(e.key)) return;
    e.preventDefault();
    move(li, e.key === 'ArrowUp' ? -1 : 1);
    li.focus();
  });
  document.addEventListener('pointerdown', (e) => {
    const handle = e.target.closest && e.target.closest('.sxs-handle');
    const form = handle && rankForm(handle);
    if (!form) return;
    e.preventDefault();
    const li = handle.closest('.sxs-output');
    drag = {form, li, list: listOf(form)};
    li.classList.add('sxs-dragging');
  });
  document.addEventListener('pointermove', (e) => {
    if (!drag) return;
    e.preventDefault();
    const others = Array.from(drag.list.children).filter(x => x !== drag.li);
    const below = others.find(x => { const r = x.getBoundingClientRect(); return e.clientY < r.top + r.height / 2; });
    if (below) { if (drag.li.nextElementSibling !== below) drag.list.insertBefore(drag.li, below); }
    else if (drag.list.lastElementChild !== drag.li) drag.list.appendChild(drag.li);
  });
  function drop() {
    if (!drag) return;
    const d = drag;
    drag = null;
    d.li.classList.remove('sxs-dragging');
    commit(d.form);
  }
  document.addEventListener('pointerup', drop);
  document.addEventListener('pointercancel', drop);

  // a tie has no strength: the strength's choices are cleared and disabled while it is chosen
  function strengthFollows(form) {
    const tie = form.querySelector('input[name=preference][value=tie]');
    const strength = form.querySelectorAll('input[name=strength]');
    if (!tie || !strength.length) return;
    strength.forEach(x => {
      if (tie.checked && x.checked) {
        x.checked = false;
        x.dispatchEvent(new Event('change', {bubbles: true}));
      }
      x.disabled = tie.checked;
    });
  }
  document.addEventListener('change', (e) => {
    if (e.target.name === 'preference' && e.target.form && e.target.form.matches('form.sxs-item')) strengthFollows(e.target.form);
  });
  document.querySelectorAll('form.sxs-item').forEach(form => {
    if (rankForm(form)) restore(form);
    strengthFollows(form);
  });
  function playedOf(form) {
    try {
      const v = JSON.parse(form.elements.played.value || '[]');
      return Array.isArray(v) ? v.map(String) : [];
    } catch (e) { return []; }
  }
  function paintPlayed(form) {
    if (!form.elements.played) return;
    const done = playedOf(form);
    form.querySelectorAll('.sxs-clip').forEach(box => {
      const ok = done.includes(box.dataset.clipBox);
      box.classList.toggle('sxs-heard', ok);
      box.querySelector('.sxs-played').textContent = ok ? 'Played ✓' : 'Not played yet';
    });
  }
  document.addEventListener('ended', (e) => {
    const audio = e.target, form = audio.closest ? audio.closest('form.sxs-item') : null;
    if (!form || !form.elements.played || !audio.dataset || !audio.dataset.clip) return;
    const done = playedOf(form);
    if (!done.includes(audio.dataset.clip)) done.push(audio.dataset.clip);
    form.elements.played.value = JSON.stringify(done);
    form.elements.played.dispatchEvent(new Event('change', {bubbles: true}));
    paintPlayed(form);
  }, true);
  document.addEventListener('play', (e) => {
    const form = e.target.closest ? e.target.closest('form.sxs-item') : null;
    if (form) form.querySelectorAll('audio').forEach(a => { if (a !== e.target && !a.paused) a.pause(); });
  }, true);
  document.addEventListener('tradlab:item', (e) => {
    const form = e.detail && e.detail.form;
    if (form && form.matches('form.sxs-item')) paintPlayed(form);
  });
  document.querySelectorAll('form.sxs-item').forEach(paintPlayed);
})();
