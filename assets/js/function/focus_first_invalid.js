() => setTimeout(() => {
  const el = document.querySelector('#consent-page .field-invalid input, #consent-page .field-invalid textarea');
  if (el) { el.focus({preventScroll: true}); el.scrollIntoView({block: 'center'}); }
}, 50)
