(s) => { if (s && s.status === 'complete' && s.redirect_url) {
  setTimeout(() => {
    if ([...document.querySelectorAll('.holds-redirect')].some(e => e.offsetParent)) return;
    window.location.href = s.redirect_url;
  }, 3000); } }
