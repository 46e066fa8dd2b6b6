const trouble = () => {
  if (element.classList.contains('mic-trouble')) return;
  element.classList.add('mic-trouble');
  const upload = document.querySelector('#recorder button[aria-label="Upload file"]');
  if (upload) upload.click();
};
if (!navigator.mediaDevices || !navigator.mediaDevices.enumerateDevices) { trouble(); }
else {
  navigator.mediaDevices.enumerateDevices()
    .then(ds => { if (!ds.some(d => d.kind === 'audioinput')) trouble(); }).catch(trouble);
}
if (navigator.permissions && navigator.permissions.query) {
  navigator.permissions.query({name: 'microphone'}).then(s => {
    if (s.state === 'denied') trouble();
    s.onchange = () => { if (s.state === 'denied') trouble(); };
  }).catch(() => {});
}
