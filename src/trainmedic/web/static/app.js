// trainmedic: the diagnose page. Files (or a paste, or a sample) go through the reducer worker,
// the user sees exactly what will be sent, and only then is it posted to /api/diagnose as JSON.
// Log text is only ever put into the page with textContent, never as HTML.
'use strict';

(() => {
  const form = document.getElementById('diagnose-form');
  if (!form) return;
  const $ = (id) => document.getElementById(id);
  const maxUpload = Number(form.dataset.maxUpload || 0);
  const state = { items: [], lib: null, worker: null, jobs: new Map(), nextJob: 1, pasteTimer: null };
  const fmt = new Intl.NumberFormat('en');

  function human(n) {
    if (n === null || n === undefined) return '?';
    const units = ['B', 'KB', 'MB', 'GB', 'TB'];
    let v = n;
    let u = 0;
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u += 1; }
    return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
  }

  function setStatus(text, isError) {
    const el = $('status');
    el.textContent = text;
    el.classList.toggle('error', Boolean(isError));
  }

  async function library() {
    if (!state.lib) {
      const r = await fetch('/api/library');
      if (!r.ok) throw new Error('cannot load the library from the server');
      const j = await r.json();
      state.lib = { keywords: j.keywords, keepEveryLine: j.keep_every_line, progress: j.progress || [],
        prefixes: j.prefixes };
    }
    return state.lib;
  }

  function worker() {
    if (!state.worker) {
      state.worker = new Worker('/static/reducer.js');
      state.worker.onmessage = onWorker;
      state.worker.onerror = (e) => setStatus(`Reading the files failed: ${e.message}`, true);
    }
    return state.worker;
  }

  function resetWorker() {
    if (state.worker) state.worker.terminate();
    state.worker = null;
    state.jobs.clear();
  }

  function onWorker(ev) {
    const m = ev.data;
    const item = state.jobs.get(m.job);
    if (!item) return;
    if (m.type === 'progress') {
      item.done = m.done;
      item.total = m.total;
    } else if (m.type === 'done') {
      item.result = m.result;
      item.status = 'ready';
      state.jobs.delete(m.job);
    } else if (m.type === 'error') {
      item.status = 'error';
      item.error = m.message;
      state.jobs.delete(m.job);
    }
    renderItem(item);
    update();
  }

  async function prepare(item) {
    let lib;
    try {
      lib = await library();
    } catch (e) {
      setStatus(String(e.message || e), true);
      return;
    }
    item.status = 'reading';
    item.result = null;
    item.done = 0;
    item.total = item.file.size;
    const job = state.nextJob;
    state.nextJob += 1;
    state.jobs.set(job, item);
    renderItem(item);
    update();
    worker().postMessage({
      type: 'reduce', job, file: item.file, keywords: lib.keywords, keepEveryLine: lib.keepEveryLine,
      progress: lib.progress, prefixes: lib.prefixes, options: { hosts: $('redact-hosts').checked },
    });
  }

  function add(entries) {
    for (const { file, name } of entries) {
      if (!file.size) continue;
      const item = { key: `f${state.nextJob}-${name}`, file, name, status: 'waiting', result: null };
      state.items.push(item);
      $('items').appendChild(card(item));
      prepare(item);
    }
    update();
  }

  function prepareAll() {
    resetWorker();
    for (const item of state.items) prepare(item);
  }

  function remove(item) {
    state.items = state.items.filter((i) => i !== item);
    if (item.el) item.el.remove();
    update();
  }

  // ---------------------------------------------------------------- rendering

  function card(item) {
    const li = document.createElement('li');
    li.className = 'item';
    const head = document.createElement('div');
    head.className = 'item-head';
    const name = document.createElement('span');
    name.className = 'item-name';
    name.textContent = item.name;
    const size = document.createElement('span');
    size.className = 'muted';
    size.textContent = human(item.file.size);
    const rm = document.createElement('button');
    rm.type = 'button';
    rm.className = 'link';
    rm.textContent = 'remove';
    rm.setAttribute('aria-label', `remove ${item.name}`);
    rm.addEventListener('click', () => remove(item));
    head.append(name, size, rm);
    const bar = document.createElement('progress');
    bar.max = 1;
    bar.value = 0;
    const info = document.createElement('div');
    info.className = 'item-info';
    const details = document.createElement('details');
    details.className = 'sent';
    const summary = document.createElement('summary');
    summary.textContent = 'Show exactly what will be sent';
    const pre = document.createElement('pre');
    pre.className = 'sent-text';
    details.append(summary, pre);
    details.addEventListener('toggle', () => { if (details.open) fillPreview(item, pre); });
    li.append(head, bar, info, details);
    item.el = li;
    item.parts = { bar, info, details, pre };
    return li;
  }

  function redactionText(counts) {
    const names = { token: 'token', key: 'key', bearer: 'bearer token', password: 'password in a URL',
      secret: 'secret', email: 'e-mail address', host: 'host name', ip: 'IP address' };
    const parts = Object.entries(counts || {}).map(([k, n]) => `${n} ${names[k] || k}${n > 1 ? 's' : ''}`);
    return parts.length ? `redacted: ${parts.join(', ')}` : 'nothing to redact found';
  }

  function renderItem(item) {
    if (!item.parts) return;
    const { bar, info, details, pre } = item.parts;
    item.el.dataset.status = item.status;
    if (item.status === 'reading') {
      bar.hidden = false;
      bar.value = item.total ? item.done / item.total : 0;
      info.textContent = `reading ${human(item.done)} of ${human(item.total)}…`;
      details.hidden = true;
      return;
    }
    bar.hidden = true;
    if (item.status === 'error') {
      info.textContent = `cannot read this file: ${item.error}`;
      info.classList.add('error');
      details.hidden = true;
      return;
    }
    const r = item.result;
    if (!r) return;
    details.hidden = false;
    if (r.mode === 'raw') {
      info.textContent = `${r.compressed} compressed: this browser cannot open it, so it is sent as is ` +
        `(${human(r.size)}, not reduced, not redacted). Decompress it first to reduce and redact it here.`;
      info.classList.add('warn');
    } else if (r.mode === 'whole') {
      info.textContent = `small file: all ${fmt.format(r.totalLines)} lines are sent (${human(r.sentBytes)}); ` +
        redactionText(r.redactions);
    } else {
      const pct = r.size ? ((100 * r.sentBytes) / r.size) : 0;
      info.textContent = `reduced here: ${fmt.format(r.keptLines)} of ${fmt.format(r.totalLines)} lines kept, ` +
        `${human(r.sentBytes)} of ${human(r.size)} sent (${pct < 0.1 ? '<0.1' : pct.toFixed(1)}%); ` +
        redactionText(r.redactions) + (r.truncated ? '. Too many candidate lines: only the first ones and the end are kept.' : '');
    }
    if (details.open) fillPreview(item, pre);
  }

  function fillPreview(item, pre) {
    const r = item.result;
    if (!r) return;
    if (r.mode === 'raw') {
      pre.textContent = `(${human(r.size)} of ${r.compressed} data, sent unchanged)`;
    } else if (r.mode === 'whole') {
      pre.textContent = r.text;
    } else {
      const out = [];
      let prev = 0;
      const width = String(r.totalLines).length;
      for (const [n, t] of r.lines) {
        if (n > prev + 1) out.push(`${' '.repeat(width)}   … ${fmt.format(n - prev - 1)} line(s) not sent …`);
        out.push(`${String(n).padStart(width)} │ ${t}`);
        prev = n;
      }
      if (r.totalLines > prev) out.push(`${' '.repeat(width)}   … ${fmt.format(r.totalLines - prev)} line(s) not sent …`);
      pre.textContent = out.join('\n');
    }
  }

  function payload() {
    const files = [];
    for (const item of state.items) {
      const r = item.result;
      if (!r) continue;
      if (r.mode === 'raw') files.push({ name: item.name, data_base64: r.base64 });
      else if (r.mode === 'whole') { if (r.text.trim()) files.push({ name: item.name, text: r.text }); }
      else files.push({ name: item.name, lines: r.lines, total_lines: r.totalLines, bytes: r.size });
    }
    return { files };
  }

  function update() {
    const busy = state.items.some((i) => i.status === 'reading' || i.status === 'waiting');
    const ready = state.items.filter((i) => i.status === 'ready');
    $('preview').hidden = state.items.length === 0;
    const total = ready.reduce((a, i) => a + (i.result ? i.result.sentBytes : 0), 0);
    const original = ready.reduce((a, i) => a + i.file.size, 0);
    $('total').textContent = ready.length
      ? `${ready.length} file${ready.length > 1 ? 's' : ''}: ${human(total)} will be sent (of ${human(original)} chosen).`
      : '';
    $('diagnose').disabled = busy || ready.length === 0;
    if (busy) setStatus('Reading the logs in your browser…');
    else if (ready.length) setStatus('Ready. Check what will be sent, then press Diagnose.');
    else setStatus('');
  }

  // ---------------------------------------------------------------- inputs

  async function walk(entry, path) {
    if (entry.name.startsWith('.')) return [];
    if (entry.isFile) {
      const file = await new Promise((res, rej) => entry.file(res, rej));
      return [{ file, name: path + file.name }];
    }
    if (!entry.isDirectory) return [];
    const reader = entry.createReader();
    let all = [];
    for (;;) {
      const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
      if (!batch.length) break;
      all = all.concat(batch);
    }
    all.sort((a, b) => a.name.localeCompare(b.name));
    let out = [];
    for (const e of all) out = out.concat(await walk(e, `${path}${entry.name}/`));
    return out;
  }

  const drop = $('drop');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', async (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    const entries = [...e.dataTransfer.items].map((i) => (i.webkitGetAsEntry ? i.webkitGetAsEntry() : null));
    if (entries.some((x) => x)) {
      let files = [];
      for (const entry of entries) if (entry) files = files.concat(await walk(entry, ''));
      add(files);
    } else {
      add([...e.dataTransfer.files].map((file) => ({ file, name: file.name })));
    }
  });
  $('file-input').addEventListener('change', (e) => {
    add([...e.target.files].map((file) => ({ file, name: file.webkitRelativePath || file.name })));
    e.target.value = '';
  });
  $('folder-input').addEventListener('change', (e) => {
    add([...e.target.files].filter((f) => !f.name.startsWith('.'))
      .map((file) => ({ file, name: file.webkitRelativePath || file.name })));
    e.target.value = '';
  });

  $('paste').addEventListener('input', () => {
    clearTimeout(state.pasteTimer);
    state.pasteTimer = setTimeout(() => {
      const old = state.items.find((i) => i.key === 'paste');
      if (old) remove(old);
      const text = $('paste').value;
      if (!text.trim()) return;
      const file = new File([text], 'pasted.log', { type: 'text/plain' });
      const item = { key: 'paste', file, name: 'pasted.log', status: 'waiting', result: null };
      state.items.unshift(item);
      $('items').prepend(card(item));
      prepare(item);
      update();
    }, 250);
  });

  $('redact-hosts').addEventListener('change', () => {
    worker().postMessage({ type: 'reset' });
    prepareAll();
  });

  $('clear').addEventListener('click', () => {
    resetWorker();
    state.items = [];
    $('items').replaceChildren();
    $('paste').value = '';
    update();
  });

  for (const button of document.querySelectorAll('button[data-sample]')) {
    button.addEventListener('click', async () => {
      setStatus('Loading the sample…');
      const r = await fetch(`/api/samples/${encodeURIComponent(button.dataset.sample)}`);
      if (!r.ok) { setStatus('Cannot load that sample.', true); return; }
      const s = await r.json();
      resetWorker();
      state.items = [];
      $('items').replaceChildren();
      $('paste').value = '';
      add(s.files.map((f) => ({ file: new File([f.text], f.name.split('/').pop(), { type: 'text/plain' }), name: f.name })));
      $('preview').scrollIntoView({ behavior: 'smooth', block: 'start' });
    });
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const body = JSON.stringify(payload());
    if (maxUpload && body.length > maxUpload) {
      setStatus(`This is ${human(body.length)} to send, over the server's ${human(maxUpload)} limit. ` +
        'Remove files, or restart the server with a larger --max-upload-mb.', true);
      return;
    }
    $('diagnose').disabled = true;
    setStatus('Diagnosing…');
    let r;
    try {
      r = await fetch('/api/diagnose', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    } catch (err) {
      setStatus(`The server did not answer: ${err.message}`, true);
      update();
      return;
    }
    let j = {};
    try { j = await r.json(); } catch (err) { j = {}; }
    if (!r.ok) {
      setStatus(j.detail ? String(j.detail) : `The server said ${r.status}.`, true);
      $('diagnose').disabled = false;
      return;
    }
    window.location.assign(j.url);
  });

  update();
})();
