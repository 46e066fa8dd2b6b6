// The listening test's page code (tabs/listening.py, services/listening/protocol.py): a classic
// script the listener's page loads once (Tab.scripts). It relies on the item-form contract
// (docs/plugins.md, "Its page code"): the page says `tradlab:item` on each new item's form, the
// answer is the form's named fields.
//
// Each clip (<audio data-clip=KEY>) played to its end adds KEY to the hidden field `played` (JSON)
// and says `change`, so the draft keeps it and the refusal's mark goes; the server refuses an
// answer until every clip of the page is in it, naming the missing ones, and until the clips have
// had time to play since the page was shown. One clip plays at a time.
(function () {
  'use strict';
  function ltForm(el) { return el && el.closest ? el.closest('form.lt-item') : null; }
  function playedOf(form) {
    try {
      const v = JSON.parse(form.elements.played.value || '[]');
      return Array.isArray(v) ? v.map(String) : [];
    } catch (e) { return []; }
  }
  function paint(form) {
    const done = playedOf(form);
    form.querySelectorAll('.lt-clip').forEach(box => {
      const ok = done.includes(box.dataset.clip);
      box.classList.toggle('lt-done', ok);
      box.querySelector('.lt-played').textContent = ok ? 'Played ✓' : 'Not played yet';
    });
  }
  document.addEventListener('ended', (e) => {
    const audio = e.target, form = ltForm(audio);
    if (!form || !audio.dataset || !audio.dataset.clip) return;
    const done = playedOf(form);
    if (!done.includes(audio.dataset.clip)) done.push(audio.dataset.clip);
    const field = form.elements.played;
    field.value = JSON.stringify(done);
    field.dispatchEvent(new Event('change', {bubbles: true}));
    paint(form);
  }, true);
  document.addEventListener('play', (e) => {
    const form = ltForm(e.target);
    if (!form) return;
    form.querySelectorAll('audio').forEach(a => { if (a !== e.target && !a.paused) a.pause(); });
  }, true);
  document.addEventListener('tradlab:item', (e) => {
    const form = e.detail && e.detail.form;
    if (form && form.matches('form.lt-item')) paint(form);
  });
  document.querySelectorAll('form.lt-item').forEach(paint);
})();
