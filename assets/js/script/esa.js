// Error Span Annotation's page code (tabs/esa.py, services/esa/protocol.py): a classic script that
// the ESA annotator's page loads once (Tab.scripts). It relies on the item-form contract
// (docs/plugins.md, "Its page code"): the page says `tradlab:item` on each new item's form, the
// answer is the form's named fields, and the spans go in the hidden field `spans` (JSON), which
// says `change` once set so that the draft is kept and a refusal's mark goes.
//
// The translation (its text in .esa-output's data-text) is shown one element per character, code
// points as the server counts them, and a [MISSING] token after it (index = the text's length).
// A selection is marked by dragging with a mouse, a pen or a finger (pointer events; shift+click
// extends), or with the keyboard on the focused translation: arrow keys move the caret, Shift
// extends, Ctrl/Alt jump by word, Home/End; then m (minor) or M (major), or the Minor/Major
// buttons, make it a span. Each span in the list below has a button to toggle its severity and
// one to remove it. Spans never overlap (Appraise refuses that too); the [MISSING] token holds
// one span at most, and marking it again changes its severity.
//
// Speech (docs/esa.md, "Speech"): an output with audio has a waveform (.esa-wave, drawn by the
// vendored wavesurfer.js and its Regions plugin, assets/vendor/wavesurfer/). Dragging across it
// selects a time span, as does the keyboard on the focused waveform (Space plays and pauses, the
// arrow keys move the playhead, [ and ] set the start and end at it) or the Start here / End here
// buttons; the severity buttons (and MQM's category) then mark it, a span {start_s, end_s} in
// seconds beside the text's, listed with its times and a button that plays it.
(function () {
  'use strict';
  // form -> {anchor, caret, sel: [lo, hi] inclusive, or null; time: [start_s, end_s] or null, from: a start set}
  const state = new WeakMap();
  const players = new WeakMap();  // form -> {ws, regions, form} of its output's waveform
  let live = [];  // the players made, destroyed once their form has left the page
  let drag = null;  // the drag under way: {form, from, to}

  function outputOf(form) { return form.querySelector('.esa-output'); }
  function charsOf(form) { return Array.from(outputOf(form).dataset.text || ''); }
  function stateOf(form) {
    let s = state.get(form);
    if (!s) { s = {anchor: null, caret: null, sel: null, time: null, from: null}; state.set(form, s); }
    return s;
  }
  function spansOf(form) {
    try {
      const v = JSON.parse(form.elements.spans.value || '[]');
      return Array.isArray(v) ? v.filter(s => s && typeof s === 'object') : [];
    } catch (e) { return []; }
  }
  function isTime(s) { return s.start_s !== undefined; }
  // the text's spans (the omission last), then the audio's by their times
  function ordered(spans) {
    const text = spans.filter(s => !isTime(s)), time = spans.filter(isTime);
    text.sort((a, b) => (a.missing ? 1 : 0) - (b.missing ? 1 : 0) || a.start - b.start || a.end - b.end);
    time.sort((a, b) => a.start_s - b.start_s || a.end_s - b.end_s);
    return text.concat(time);
  }
  function seconds(t) { return t.toFixed(2); }
  function quoted(s) {
    if (isTime(s)) return seconds(s.start_s) + '–' + seconds(s.end_s) + ' s';
    return s.missing ? '[MISSING]' : '“' + s.text + '”';
  }

  // ESA-AI (services/esa/prefill.py): the pre-filled spans are in .esa-output's data-prefill, each
  // with its index `prefill`, which a span keeps while the annotator keeps, re-grades or resizes
  // it (the server works out kept / severity / edited / deleted from it). A span is shown as
  // pre-filled until touched: while its offsets and severity are the pre-filled ones.
  function prefillOf(form) {
    try {
      const v = JSON.parse(outputOf(form).dataset.prefill || '[]');
      return Array.isArray(v) ? v : [];
    } catch (e) { return []; }
  }
  function untouched(form, s) {
    if (isTime(s)) return false;
    if (s.prefill === undefined || s.prefill === null) return false;
    const p = prefillOf(form)[s.prefill];
    return !!p && p.start === s.start && p.end === s.end && p.severity === s.severity && !!p.missing === !!s.missing;
  }
  function paintPrefilled(form, spans, cells) {
    spans.forEach(s => {
      if (!untouched(form, s)) return;
      if (s.missing) { if (cells[cells.length - 1]) cells[cells.length - 1].classList.add('esa-prefilled'); return; }
      for (let i = s.start; i < s.end && i < cells.length - 1; i++) cells[i].classList.add('esa-prefilled');
    });
  }
  function originLabel(form, s, li) {
    if (!untouched(form, s)) return;
    li.classList.add('esa-span-prefilled');
    const tag = document.createElement('span');
    tag.className = 'esa-origin';
    tag.textContent = 'pre-filled';
    li.appendChild(tag);
    li.appendChild(document.createTextNode(' '));
  }
  // a new selection over one pre-filled span (kept or edited) resizes it: it takes the span's
  // place and its index; false when it overlaps anything else
  function resize(form, spans, span) {
    const clashes = spans.filter(s => !isTime(s) && !s.missing && s.start < span.end && span.start < s.end);
    const old = clashes[0];
    if (clashes.length !== 1 || old.prefill === undefined || old.prefill === null) return false;
    span.prefill = old.prefill;
    spans.splice(spans.indexOf(old), 1, span);
    note(form, 'Resized the pre-filled error ' + quoted(old) + ' to ' + quoted(span) + ', ' + span.severity + '.');
    return true;
  }

  // MQM's page (tabs/mqm.py): a form with a .mqm-category select. A span takes the picked
  // category and its forced severity, if any; the whole-segment category (option data-whole,
  // Non-translation) marks the whole output and stands alone; at most data-max-errors spans.
  // The picker's state is the select's value, emptied once a span is marked.
  function pickerOf(form) { return form.querySelector('.mqm-category'); }
  function pickedOption(form) {
    const p = pickerOf(form);
    return p && p.value ? p.options[p.selectedIndex] : null;
  }
  function wholeCategory(form) {
    const o = form.querySelector('.mqm-category option[data-whole]');
    return o ? o.value : null;
  }
  // the whole output, when the whole-segment category is picked (whatever is selected)
  function wholeSpan(form) {
    const o = pickedOption(form);
    if (!o || !o.hasAttribute('data-whole')) return null;
    const chars = charsOf(form);
    return {start: 0, end: chars.length, text: chars.join(''), severity: o.dataset.severity || 'major', missing: false};
  }
  // the span given its category and severity, or why it cannot be marked (the service says the same)
  function mqmRefusal(form, span, severity, spans) {
    const o = pickedOption(form);
    if (!o) return 'Pick the error’s category first (c jumps to the list).';
    span.category = o.value;
    span.severity = o.dataset.severity || severity;
    const whole = wholeCategory(form), cap = Number(form.dataset.maxErrors || 0);
    const replaces = span.missing && spans.some(s => s.missing);
    const marked = spans.find(s => s.category === whole);
    if (marked) return 'This segment is marked ' + whole + ', which replaces every other error: remove it first.';
    if (span.category === whole && spans.length) return whole + ' replaces every other error: remove them first.';
    if (cap && !replaces && spans.length >= cap) {
      return 'At most ' + cap + ' errors per segment: remove one first (mark the ' + cap + ' most severe).';
    }
    return '';
  }
  function named(severity) { return severity.charAt(0).toUpperCase() + severity.slice(1); }

  // the selection as a span record: the [MISSING] token alone is an omission; a selection that
  // reaches the token stops at the text's end; spaces at its edges are left out
  function spanOf(form, severity) {
    const whole = wholeSpan(form);
    if (whole) return whole;
    const time = stateOf(form).time;
    if (time) return {start_s: time[0], end_s: time[1], severity: severity, missing: false};
    const sel = stateOf(form).sel;
    if (!sel) return null;
    const chars = charsOf(form), n = chars.length;
    let [lo, hi] = sel;
    if (lo >= n) return {start: n, end: n, text: '', severity: severity, missing: true};
    hi = Math.min(hi, n - 1);
    let a = lo, b = hi;
    while (a < b && /\s/.test(chars[a])) a++;
    while (b > a && /\s/.test(chars[b])) b--;
    return {start: a, end: b + 1, text: chars.slice(a, b + 1).join(''), severity: severity, missing: false};
  }

  function paint(form) {
    const out = outputOf(form);
    if (!out) return;
    const st = stateOf(form), spans = ordered(spansOf(form));
    const cells = out.querySelectorAll('.esa-ch');
    cells.forEach(c => c.classList.remove('esa-minor', 'esa-major', 'esa-sel', 'esa-caret', 'esa-prefilled'));
    spans.filter(s => !isTime(s)).forEach(s => {
      if (s.missing) { if (cells[cells.length - 1]) cells[cells.length - 1].classList.add('esa-' + s.severity); return; }
      for (let i = s.start; i < s.end && i < cells.length - 1; i++) cells[i].classList.add('esa-' + s.severity);
    });
    paintPrefilled(form, spans, cells);
    if (st.sel) for (let i = st.sel[0]; i <= st.sel[1] && i < cells.length; i++) cells[i].classList.add('esa-sel');
    if (st.caret !== null && cells[st.caret]) cells[st.caret].classList.add('esa-caret');
    const picked = form.querySelector('.esa-picked'), chosen = spanOf(form, 'minor');
    picked.textContent = chosen ? 'Selected: ' + quoted(chosen) + (isTime(chosen) ? ' of the audio' : '') : 'Select an error first.';
    form.querySelectorAll('.esa-mark').forEach(b => { b.disabled = !chosen; });
    const list = form.querySelector('.esa-spans');
    list.textContent = '';
    spans.forEach((s, k) => {
      const li = document.createElement('li');
      li.className = 'esa-span esa-span-' + s.severity;
      const sev = document.createElement('span');
      sev.className = 'esa-sev';
      sev.textContent = named(s.severity);
      li.appendChild(sev);
      if (s.category) {
        const cat = document.createElement('span');
        cat.className = 'mqm-cat';
        cat.textContent = ' ' + s.category;
        li.appendChild(cat);
      }
      li.appendChild(document.createTextNode(' ' + quoted(s) + (isTime(s) ? ' of the audio' + spokenWords(form, s) : '') + ' '));
      originLabel(form, s, li);
      if (isTime(s)) {
        li.classList.add('esa-span-time');
        const play = document.createElement('button');
        play.type = 'button';
        play.className = 'esa-play-span';
        play.dataset.span = String(k);
        play.textContent = 'Play';
        play.setAttribute('aria-label', 'Play ' + quoted(s) + ' of the audio');
        li.appendChild(play);
      }
      const other = s.severity === 'major' ? 'minor' : 'major';
      [['esa-toggle', 'Make ' + other, 'Make ' + quoted(s) + ' a ' + other + ' error'],
       ['esa-remove', 'Remove', 'Remove the ' + s.severity + ' error ' + quoted(s)]].forEach(([cls, words, label]) => {
        if (cls === 'esa-toggle' && pickerOf(form)) return;  // MQM: remove and mark again
        const b = document.createElement('button');
        b.type = 'button';
        b.className = cls;
        b.dataset.span = String(k);
        b.textContent = words;
        b.setAttribute('aria-label', label);
        li.appendChild(b);
      });
      list.appendChild(li);
    });
    paintRegions(form, spans);
  }

  function note(form, words) { form.querySelector('.esa-note').textContent = words; }

  function write(form, spans) {
    const field = form.elements.spans;
    field.value = JSON.stringify(ordered(spans));
    field.dispatchEvent(new Event('change', {bubbles: true}));  // the draft, the refusal's mark
    paint(form);
  }

  function mark(form, severity) {
    const span = spanOf(form, severity);
    if (!span) { note(form, 'Select an error first: drag across it, or use the arrow keys.'); return; }
    const spans = ordered(spansOf(form));
    const refused = pickerOf(form) ? mqmRefusal(form, span, severity, spans) : '';
    if (refused) { note(form, refused); return; }
    if (isTime(span)) {
      const clash = spans.find(s => isTime(s) && s.start_s < span.end_s && span.start_s < s.end_s);
      if (clash) {
        note(form, 'This overlaps the error at ' + quoted(clash) + ': remove that one first, or mark another part.');
        return;
      }
      spans.push(span);
    } else if (span.missing) {
      const had = spans.find(s => s.missing);
      if (had) Object.assign(had, {severity: span.severity, category: span.category}); else spans.push(span);
    } else {
      const clash = spans.find(s => !isTime(s) && !s.missing && s.start < span.end && span.start < s.end);
      if (clash && !resize(form, spans, span)) {
        note(form, 'This overlaps the error ' + quoted(clash) + ': remove that one first, or mark another part.');
        return;
      }
      if (!clash) spans.push(span);
    }
    const st = stateOf(form);
    st.sel = null;
    st.time = null;
    st.from = null;
    st.anchor = st.caret;
    if (pickerOf(form)) pickerOf(form).value = '';
    if (!span.prefill && span.prefill !== 0) {  // a resized pre-filled span has had its own note
      note(form, 'Marked ' + quoted(span) + ' as a ' + span.severity + ' error' + (span.category ? ' (' + span.category + ').' : '.'));
    }
    write(form, spans);
  }

  // the translation as one element per character, then the [MISSING] token
  function render(form) {
    const out = outputOf(form);
    if (!out) return;
    state.set(form, {anchor: null, caret: null, sel: null, time: null, from: null});
    out.textContent = '';
    const text = document.createElement('span');
    text.className = 'esa-text';
    charsOf(form).forEach((ch, i) => {
      const c = document.createElement('span');
      c.className = 'esa-ch';
      c.dataset.i = String(i);
      c.textContent = ch;
      text.appendChild(c);
    });
    out.appendChild(text);
    out.appendChild(document.createTextNode(' '));
    const missing = document.createElement('span');
    missing.className = 'esa-ch esa-missing';
    missing.dataset.i = String(charsOf(form).length);
    missing.textContent = '[MISSING]';
    out.appendChild(missing);
    note(form, '');
    wave(form);
    paint(form);
  }

  function select(form, anchor, caret) {
    const st = stateOf(form);
    st.anchor = anchor;
    st.caret = caret;
    st.sel = [Math.min(anchor, caret), Math.max(anchor, caret)];
    st.time = null;  // one selection at a time: the text's or the audio's
    paint(form);
  }

  function cellAt(x, y, out) {
    const el = document.elementFromPoint(x, y);
    const c = el && el.closest && el.closest('.esa-ch');
    return c && out.contains(c) ? c : null;
  }

  // -- speech: the output's waveform ---------------------------------------------------------

  const COLOURS = {minor: 'rgba(245, 158, 11, 0.35)', major: 'rgba(220, 38, 38, 0.35)', sel: 'rgba(37, 99, 235, 0.3)'};
  const SPAN_ID = 'esa-span-';

  function audioOf(form) { return form.querySelector('.esa-audio'); }
  function wordsOf(form) {
    try { return JSON.parse(audioOf(form).dataset.words || '[]'); } catch (e) { return []; }
  }
  // the transcript's words a time span covers, as the server maps them (overlap for a positive time)
  function spokenWords(form, s) {
    if (!audioOf(form)) return '';
    const covered = wordsOf(form).filter(w => Math.min(w.end, s.end_s) - Math.max(w.start, s.start_s) > 0);
    return covered.length ? ' (“' + covered.map(w => w.word).join(' ') + '”)' : '';
  }
  function duration(form) {
    const p = players.get(form);
    return (p && p.ws.getDuration()) || Number(audioOf(form).dataset.duration || 0);
  }
  // a time selection, kept inside the audio and at least a hundredth of a second long
  function selectTime(form, a, b) {
    const d = duration(form), st = stateOf(form);
    const lo = Math.max(0, Math.min(a, b)), hi = Math.min(d, Math.max(a, b));
    st.time = hi - lo >= 0.01 ? [Math.round(lo * 1000) / 1000, Math.round(hi * 1000) / 1000] : null;
    st.sel = null;
    paint(form);
  }
  // the keyboard's and the buttons' way: [ sets the start at the playhead, ] the end
  function setEdge(form, edge) {
    const p = players.get(form);
    if (!p) return;
    const t = p.ws.getCurrentTime(), st = stateOf(form);
    if (edge === 'start') {
      st.from = t;
      st.time = null;
      st.sel = null;
      note(form, 'Start set at ' + seconds(t) + ' s: move on and set the end (]).');
      paint(form);
      return;
    }
    const from = st.from !== null ? st.from : (st.time ? st.time[0] : 0);
    selectTime(form, from, t);
    if (!stateOf(form).time) note(form, 'Set the start ([) before the end, at another time.');
  }
  function paintRegions(form, spans) {
    const p = players.get(form);
    if (!p || !p.ready) return;
    p.regions.getRegions().slice().forEach(r => r.remove());
    spans.filter(isTime).forEach((s, k) => {
      p.regions.addRegion({id: SPAN_ID + k, start: s.start_s, end: s.end_s, color: COLOURS[s.severity] || COLOURS.major,
        drag: false, resize: false});
    });
    const time = stateOf(form).time;
    if (time) p.regions.addRegion({id: 'esa-sel', start: time[0], end: time[1], color: COLOURS.sel, drag: false, resize: true});
  }
  function tick(form) {
    const p = players.get(form), clock = form.querySelector('.esa-clock'), play = form.querySelector('.esa-play');
    if (!p || !clock) return;
    clock.textContent = seconds(p.ws.getCurrentTime()) + ' / ' + seconds(p.ws.getDuration() || duration(form)) + ' s';
    play.textContent = p.ws.isPlaying() ? 'Pause' : 'Play';
  }
  // the waveform of the form's output audio (none without one), the players of forms gone destroyed
  function wave(form) {
    live = live.filter(p => {
      if (p.form.isConnected && p.form !== form) return true;
      p.ws.destroy();
      return false;
    });
    const box = form.querySelector('.esa-wave');
    if (!box || !window.WaveSurfer || !window.WaveSurfer.Regions) return;
    box.textContent = '';
    const regions = window.WaveSurfer.Regions.create();
    const ws = window.WaveSurfer.create({
      container: box, url: box.dataset.src, height: 72, waveColor: '#6b7280', progressColor: '#1f2937',
      cursorColor: '#2563eb', cursorWidth: 2, normalize: true, dragToSeek: false, plugins: [regions],
    });
    const p = {ws: ws, regions: regions, form: form, ready: false};
    players.set(form, p);
    live.push(p);
    regions.enableDragSelection({color: COLOURS.sel});
    regions.on('region-created', (r) => {
      if (r.id.indexOf(SPAN_ID) === 0 || r.id === 'esa-sel') return;
      const a = r.start, b = r.end;
      r.remove();  // the drag's region becomes the selection, drawn again by paint
      outputOf(form).blur();
      selectTime(form, a, b);
      box.focus({preventScroll: true});
    });
    regions.on('region-updated', (r) => { if (r.id === 'esa-sel') selectTime(form, r.start, r.end); });
    ws.on('ready', () => { p.ready = true; box.dataset.ready = 'true'; paint(form); tick(form); });
    ws.on('timeupdate', () => tick(form));
    ws.on('play', () => tick(form));
    ws.on('pause', () => tick(form));
    ws.on('error', () => note(form, 'The audio could not be loaded: reload the page.'));
  }

  document.addEventListener('keydown', (e) => {
    const box = e.target.classList && e.target.classList.contains('esa-wave') ? e.target : null;
    if (!box || e.ctrlKey || e.metaKey || e.altKey) return;
    const form = box.closest('form'), p = players.get(form);
    if (!p) return;
    const step = e.shiftKey ? 1 : 0.1;
    if (e.key === ' ' || e.key === 'k') { e.preventDefault(); p.ws.playPause(); }
    else if (e.key === 'ArrowRight') { e.preventDefault(); p.ws.setTime(Math.min(duration(form), p.ws.getCurrentTime() + step)); }
    else if (e.key === 'ArrowLeft') { e.preventDefault(); p.ws.setTime(Math.max(0, p.ws.getCurrentTime() - step)); }
    else if (e.key === 'Home') { e.preventDefault(); p.ws.setTime(0); }
    else if (e.key === '[') { e.preventDefault(); setEdge(form, 'start'); }
    else if (e.key === ']') { e.preventDefault(); setEdge(form, 'end'); }
    else if (e.key === 'm' || e.key === 'M') { e.preventDefault(); mark(form, e.key === 'M' ? 'major' : 'minor'); }
    else if (e.key === 'c' && pickerOf(form)) { e.preventDefault(); pickerOf(form).focus(); }
    else if (e.key === 'Escape') { const st = stateOf(form); st.time = null; st.from = null; paint(form); }
    else return;
    tick(form);
  });

  document.addEventListener('tradlab:item', (e) => {
    if (!(e.target.classList && e.target.classList.contains('esa-item'))) return;
    render(e.target);
    // a practice item's refusals counted (docs/esa.md, "Quality control"): the server shows its
    // feedback once, then lets the annotator go on (unless the study's tutorial blocks)
    const tries = e.target.querySelector('input[name="practice_tries"]');
    if (tries && e.detail && e.detail.refused) {
      tries.value = String((parseInt(tries.value, 10) || 0) + 1);
      tries.dispatchEvent(new Event('change', {bubbles: true}));
    }
  });
  document.addEventListener('pointerdown', (e) => {
    const c = e.target.closest && e.target.closest('.esa-output .esa-ch');
    if (!c || e.button !== 0) return;
    e.preventDefault();  // a drag marks characters: no text selection, no scrolling
    const form = c.closest('form'), i = Number(c.dataset.i), st = stateOf(form);
    const from = e.shiftKey && st.anchor !== null ? st.anchor : i;
    drag = {form: form, from: from, to: i};
    outputOf(form).focus({preventScroll: true});
    select(form, from, i);
  });
  document.addEventListener('pointermove', (e) => {
    if (!drag) return;
    const c = cellAt(e.clientX, e.clientY, outputOf(drag.form));
    if (c && Number(c.dataset.i) !== drag.to) {
      drag.to = Number(c.dataset.i);
      select(drag.form, drag.from, drag.to);
    }
  });
  function endDrag() { drag = null; }
  document.addEventListener('pointerup', endDrag);
  document.addEventListener('pointercancel', endDrag);

  document.addEventListener('focusin', (e) => {
    const out = e.target.classList && e.target.classList.contains('esa-output') ? e.target : null;
    if (!out) return;
    const form = out.closest('form'), st = stateOf(form);
    if (st.caret === null) select(form, 0, 0);
  });

  function wordStep(chars, i, dir) {
    const n = chars.length;
    const word = k => k >= 0 && k < n && /[\p{L}\p{N}]/u.test(chars[k]);
    if (dir > 0) {
      while (i < n && word(i)) i++;
      while (i < n && !word(i)) i++;
      return i;
    }
    i--;
    while (i > 0 && !word(i)) i--;
    while (i > 0 && word(i - 1)) i--;
    return Math.max(0, i);
  }

  document.addEventListener('keydown', (e) => {
    const out = e.target.classList && e.target.classList.contains('esa-output') ? e.target : null;
    if (!out) return;
    const form = out.closest('form'), st = stateOf(form), chars = charsOf(form), n = chars.length;
    const caret = st.caret === null ? 0 : st.caret;
    let next = null;
    if (e.key === 'ArrowRight') next = e.ctrlKey || e.altKey ? wordStep(chars, caret, 1) : caret + 1;
    else if (e.key === 'ArrowLeft') next = e.ctrlKey || e.altKey ? wordStep(chars, caret, -1) : caret - 1;
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = n;
    if (next !== null) {
      e.preventDefault();
      next = Math.max(0, Math.min(n, next));
      select(form, e.shiftKey && st.anchor !== null ? st.anchor : next, next);
      return;
    }
    if ((e.key === 'm' || e.key === 'M') && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      mark(form, e.key === 'M' ? 'major' : 'minor');
    } else if (e.key === 'c' && pickerOf(form) && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      pickerOf(form).focus();
    } else if (e.key === 'Escape' && st.sel) {
      st.sel = null;
      paint(form);
    }
  });

  document.addEventListener('click', (e) => {
    const b = e.target.closest && e.target.closest('.esa-item button[type=button]');
    if (!b) return;
    const form = b.closest('form');
    if (b.classList.contains('esa-mark')) { mark(form, b.dataset.severity); return; }
    if (b.classList.contains('esa-play')) { const p = players.get(form); if (p) p.ws.playPause(); return; }
    if (b.classList.contains('esa-set-start')) { setEdge(form, 'start'); return; }
    if (b.classList.contains('esa-set-end')) { setEdge(form, 'end'); return; }
    const spans = ordered(spansOf(form)), k = Number(b.dataset.span);
    if (!spans[k]) return;
    if (b.classList.contains('esa-play-span')) {
      const p = players.get(form);
      if (p) p.ws.play(spans[k].start_s, spans[k].end_s);
      return;
    }
    if (b.classList.contains('esa-toggle')) {
      spans[k].severity = spans[k].severity === 'major' ? 'minor' : 'major';
      note(form, quoted(spans[k]) + ' is now a ' + spans[k].severity + ' error.');
    } else if (b.classList.contains('esa-remove')) {
      note(form, 'Removed the error ' + quoted(spans[k]) + '.');
      spans.splice(k, 1);
    } else return;
    write(form, spans);
    // the focus stays in the list (the button at the same place, else the translation)
    const again = form.querySelectorAll('.esa-spans button.' + b.className)[k];
    (again || outputOf(form)).focus({preventScroll: true});
  });

  // MQM: a picked category may make a span of its own (the whole segment)
  document.addEventListener('change', (e) => {
    if (e.target.classList && e.target.classList.contains('mqm-category')) paint(e.target.closest('form'));
  });

  // an item rendered before this script ran
  document.querySelectorAll('form.esa-item').forEach(render);
})();
