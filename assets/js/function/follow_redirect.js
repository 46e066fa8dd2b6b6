() => setTimeout(() => {
  const a = document.querySelector('#redirect-link');
  if (a && document.querySelector('.feedback-saved')) window.location.href = a.href;
}, 1500)
