// trainmedic: copy buttons on the diagnosis page (verify commands, missing-fact commands, the
// markdown report). The text to copy is read from the page with textContent; nothing is evaluated.
'use strict';

(() => {
  async function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      try {
        await navigator.clipboard.writeText(text);
        return true;
      } catch (e) { /* fall back below */ }
    }
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.className = 'offscreen';
    document.body.appendChild(area);
    area.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
    area.remove();
    return ok;
  }

  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.addEventListener('click', async () => {
      const target = document.getElementById(button.dataset.copy);
      if (!target) return;
      const text = target.value !== undefined && target.tagName === 'TEXTAREA' ? target.value : target.textContent;
      const ok = await copy(text);
      const label = button.textContent;
      button.textContent = ok ? 'Copied' : 'Copy failed: select and copy by hand';
      button.classList.toggle('copied', ok);
      setTimeout(() => { button.textContent = label; button.classList.remove('copied'); }, 1600);
    });
  }
})();
