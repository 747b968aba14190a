// trainmedic: cut a log down to its candidate evidence, in a Web Worker, before anything is sent.
//
// Big files stay on the user's machine. The file is read in 4 MiB slices (File.slice + TextDecoder,
// or DecompressionStream for gzip), so a 2 GB log costs a few MiB of memory and the page stays
// responsive. What is kept:
//   - lines containing a keyword of the library's prefilter (served by /api/library), with context;
//   - whole Python tracebacks, from "Traceback (most recent call last):" to the exception line,
//     even when other ranks' lines are interleaved;
//   - the first and last 50 lines, and in the last 2 MiB (the part the server reads for progress)
//     each rank's last line and last progress line.
// Every kept line travels with its line number in the original file, so the diagnosis quotes the
// user's own path:line. Secrets are redacted from the kept lines before they leave the worker;
// host names and IP addresses too when asked (replaced consistently, so "which host" still reads).
// Which launcher prefixes say what rank (or host) printed a line is the server's knowledge: the page
// passes on what /api/library sends (`prefixes`, regex sources from trainmedic.logs.attribution).
'use strict';

const CHUNK = 4 << 20;
const HEAD = 50;
const TAIL = 50;
const BEFORE = 5;
const AFTER = 3;
const MAX_TB = 500;
const WHOLE_LIMIT = 1 << 20; // decoded files up to 1 MiB are sent whole (options.wholeLimit overrides)
const TAIL_BYTES = 2 << 20;
const MAX_LINE = 8192;
const MAX_SEND = 24 << 20; // past this, stop keeping matches (the tail is still kept)
const TB_START = 'Traceback (most recent call last):';

// ------------------------------------------------------------------ redaction

const SECRET_RULES = [
  ['token', /\bhf_[A-Za-z0-9]{20,}/g, 'hf_<redacted>'],
  ['token', /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}/g, '<redacted-github-token>'],
  ['token', /\bgithub_pat_[A-Za-z0-9_]{20,}/g, '<redacted-github-token>'],
  ['token', /\bglpat-[A-Za-z0-9_-]{20,}/g, '<redacted-gitlab-token>'],
  ['token', /\bsk-[A-Za-z0-9_-]{20,}/g, 'sk-<redacted>'],
  ['token', /\bxox[abposr]-[A-Za-z0-9-]{10,}/g, '<redacted-slack-token>'],
  ['key', /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, '<redacted-aws-key>'],
  ['key', /-----BEGIN [A-Z ]*PRIVATE KEY-----/g, '<redacted-private-key>'],
  ['bearer', /\b(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi, '$1<redacted>'],
  ['password', /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]+@/gi, '$1<redacted>@'],
  // KEY=value settings; a value an earlier rule already replaced (hf_<redacted>) is left as it is
  ['secret', /\b([A-Za-z0-9_]*(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD)["']?\s*[=:]\s*)(["']?)(?!\w*<)[^\s"',;]{6,}/gi, '$1$2<redacted>'],
  ['email', /\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b/g, '<email>'],
];

const IPV4 = /\b(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\b/g;
const IPV6 = /\b(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}\b/g;
const FQDN = /\b(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:com|net|org|io|ai|dev|cloud|internal|local|lan|corp|cluster|svc|edu|gov|us|eu|uk|de|fr|cn|jp)\b/gi;
const AWS_HOST = /\bip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}\b/g;
const HOST_FIELD = /\b(host(?:name)?\s*[:=]\s*)([A-Za-z0-9][A-Za-z0-9.-]*)/gi;
const KEEP_IPS = new Set(['127.0.0.1', '0.0.0.0', '255.255.255.255']);

let hostNames = new Map();
let ipNames = new Map();

function pseudoHost(name) {
  const key = name.toLowerCase();
  if (!hostNames.has(key)) hostNames.set(key, `host-${hostNames.size + 1}`);
  return hostNames.get(key);
}

function pseudoIp(ip) {
  if (KEEP_IPS.has(ip)) return ip;
  if (!ipNames.has(ip)) {
    const n = ipNames.size;
    // Documentation ranges (RFC 5737): clearly not a real address, and still shaped like one.
    const nets = ['192.0.2.', '198.51.100.', '203.0.113.'];
    ipNames.set(ip, nets[Math.floor(n / 254) % 3] + ((n % 254) + 1));
  }
  return ipNames.get(ip);
}

// The launcher prefixes from /api/library, compiled: `line` (host then rank prefix, at the start),
// `host` (a host prefix; group 1 is the name), `notHost` (rank labels that look like host names),
// `rankInText` (a rank named in the message).
function compilePrefixes(p) {
  if (!p || !p.line || !p.host || !p.not_host || !p.rank_in_text) {
    throw new Error('the launcher prefixes are missing: pass on `prefixes` from /api/library');
  }
  return { line: new RegExp(p.line), host: new RegExp(p.host), notHost: new RegExp(p.not_host),
    rankInText: new RegExp(p.rank_in_text) };
}

function redact(text, hosts, counts, prefixes) {
  let out = text;
  for (const [kind, re, repl] of SECRET_RULES) {
    re.lastIndex = 0;
    if (!re.test(out)) continue;
    re.lastIndex = 0;
    out = out.replace(re, (...args) => {
      counts[kind] = (counts[kind] || 0) + 1;
      return repl.replace(/\$(\d)/g, (_, i) => args[Number(i)] || '');
    });
  }
  if (hosts) {
    const count = (kind) => { counts[kind] = (counts[kind] || 0) + 1; };
    out = out.replace(prefixes.host, (m, name) => (prefixes.notHost.test(name) ? m
      : (count('host'), pseudoHost(name) + m.slice(name.length))));
    out = out.replace(HOST_FIELD, (_, lead, name) => (count('host'), lead + pseudoHost(name)));
    out = out.replace(AWS_HOST, (m) => (count('host'), pseudoHost(m)));
    out = out.replace(FQDN, (m) => (count('host'), pseudoHost(m)));
    out = out.replace(IPV4, (m) => (KEEP_IPS.has(m) ? m : (count('ip'), pseudoIp(m))));
    out = out.replace(IPV6, (m) => (count('ip'), pseudoIp(m)));
  }
  return out;
}

// ------------------------------------------------------------------ reduction

function escapeRe(s) {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

// One regex for all keywords, written as a trie ("Connection (?:closed by peer \\[|reset)"): V8 then
// tries one branch per first character instead of every keyword, about twice as fast on big logs.
function keywordRegex(words) {
  const root = new Map();
  for (const w of words) {
    let node = root;
    for (const ch of w) {
      if (!node.has(ch)) node.set(ch, new Map());
      node = node.get(ch);
    }
    node.set('', null);
  }
  const build = (node) => {
    const alts = [];
    let end = false;
    for (const [ch, child] of node) {
      if (ch === '') end = true;
      else alts.push(escapeRe(ch) + build(child));
    }
    if (!alts.length) return '';
    if (end) return `(?:${alts.join('|')})?`; // a shorter keyword ends here: matching it is enough
    return alts.length === 1 ? alts[0] : `(?:${alts.join('|')})`;
  };
  return new RegExp(build(root), 'g');
}

function compileAll(list) {
  const out = [];
  for (const src of list || []) {
    try { out.push(new RegExp(src)); } catch (e) { /* a Python-only construct: the server still checks */ }
  }
  return out;
}

function prefixKey(line, prefixes) {
  const m = prefixes.line.exec(line);
  const key = m ? m[0].trim() : '';
  if (key) return key;
  const r = prefixes.rankInText.exec(line.slice(0, 120));
  return r ? r[0] : '';
}

class Reducer {
  constructor(keywords, keepEvery, progress, prefixes, wholeLimit) {
    this.re = keepEvery || !keywords.length ? null : keywordRegex(keywords);
    this.every = keepEvery;
    this.progress = progress;
    this.prefixes = prefixes;
    this.n = 0;
    this.kept = [];
    this.last = 0;
    this.after = 0;
    this.tbs = new Map();
    this.prev = [];
    this.whole = [];
    this.wholeLimit = wholeLimit;
    this.decoded = 0;
    this.recent = [];
    this.sentBytes = 0;
    this.truncated = false;
  }

  full() {
    if (this.sentBytes > MAX_SEND) this.truncated = true;
    return this.truncated;
  }

  keep(n, text) {
    if (n <= this.last) return;
    const t = text.length > MAX_LINE ? text.slice(0, MAX_LINE) : text;
    this.kept.push([n, t]);
    this.last = n;
    this.sentBytes += t.length + 12;
  }

  hits(body, lines) {
    if (this.every) return lines.map((_, i) => i);
    if (!this.re) return [];
    const offsets = [];
    const re = this.re;
    re.lastIndex = 0;
    let m;
    while ((m = re.exec(body)) !== null) {
      offsets.push(m.index);
      const nl = body.indexOf('\n', m.index);
      re.lastIndex = nl < 0 ? body.length : nl + 1;
    }
    const out = [];
    let pos = 0;
    let li = 0;
    for (const off of offsets) {
      while (li < lines.length && off > pos + lines[li].length) {
        pos += lines[li].length + 1;
        li += 1;
      }
      out.push(li);
    }
    return out;
  }

  tbStep(line) {
    const m = this.prefixes.line.exec(line);
    const key = m ? m[0].trim() : '';
    for (const [k, c] of this.tbs) {
      if (c + 1 > MAX_TB) this.tbs.delete(k); else this.tbs.set(k, c + 1);
    }
    if (!this.tbs.has(key)) return;
    const rest = line.slice(m ? m[0].length : 0);
    if (rest === '' || rest[0] === ' ' || rest[0] === '\t' || rest.startsWith('Traceback') ||
        rest.startsWith('During handling') || rest.startsWith('The above exception')) return;
    this.tbs.delete(key); // the exception line: the traceback is complete
    this.after = Math.max(this.after, AFTER); // multi-line messages (size mismatch lists...) follow it
  }

  // `body` ends with "\n" (or is the file's last, unterminated line); `lines` is body split into lines.
  feed(body, lines) {
    const base = this.n;
    const count = lines.length;
    if (this.whole !== null) {
      this.decoded += body.length;
      if (this.decoded <= this.wholeLimit) for (const l of lines) this.whole.push(l);
      else this.whole = null;
    }
    const hits = this.hits(body, lines);
    let h = 0;
    let i = 0;
    while (i < count) {
      const n = base + i + 1;
      const line = lines[i];
      let isHit = false;
      while (h < hits.length && hits[h] < i) h += 1;
      if (h < hits.length && hits[h] === i) { isHit = true; h += 1; }
      if (isHit && !this.full()) {
        const from = n - BEFORE;
        for (const [pn, pt] of this.prev) if (pn >= from) this.keep(pn, pt);
        for (let k = Math.max(0, i - BEFORE); k < i; k++) this.keep(base + k + 1, lines[k]);
        this.keep(n, line);
        this.after = AFTER;
      } else if (this.tbs.size || this.after > 0 || n <= HEAD) {
        this.keep(n, line);
        if (!this.tbs.size && this.after > 0) this.after -= 1;
      }
      if (this.tbs.size) this.tbStep(line);
      if (isHit && line.includes(TB_START) && !this.truncated) this.tbs.set(prefixKey(line, this.prefixes), 0);
      i += 1;
      if (!this.tbs.size && this.after === 0 && base + i + 1 > HEAD) {
        while (h < hits.length && hits[h] < i) h += 1;
        i = h < hits.length ? hits[h] : count;
      }
    }
    const tailPrev = count >= BEFORE ? [] : this.prev.slice(-(BEFORE - count));
    this.prev = tailPrev.concat(lines.slice(-BEFORE).map((t, k) => [base + count - Math.min(BEFORE, count) + k + 1, t]));
    this.recent.push({ base, lines, size: body.length });
    while (this.recent.length > 1 && this.recent.slice(1).reduce((a, r) => a + r.size, 0) >= TAIL_BYTES) {
      this.recent.shift();
    }
    this.n += count;
  }

  // The last lines, and each rank's last line and last progress line near the end.
  finish() {
    const tail = [];
    for (const r of this.recent) r.lines.forEach((t, k) => tail.push([r.base + k + 1, t]));
    const extra = new Map();
    for (const [n, t] of tail.slice(-TAIL)) extra.set(n, t);
    const seenAny = new Set();
    const seenProgress = new Set();
    let size = 0;
    for (let k = tail.length - 1; k >= 0 && size < TAIL_BYTES; k--) {
      const [n, t] = tail[k];
      size += t.length + 1;
      if (!t.trim()) continue;
      const key = prefixKey(t, this.prefixes);
      if (!seenAny.has(key)) { seenAny.add(key); extra.set(n, t); }
      if (!seenProgress.has(key) && this.progress.some((re) => re.test(t))) {
        seenProgress.add(key);
        extra.set(n, t);
      }
    }
    const merged = new Map(this.kept);
    for (const [n, t] of extra) if (!merged.has(n)) merged.set(n, t.length > MAX_LINE ? t.slice(0, MAX_LINE) : t);
    return [...merged.entries()].sort((a, b) => a[0] - b[0]);
  }
}

// ------------------------------------------------------------------ reading files

async function magic(file) {
  const head = new Uint8Array(await file.slice(0, 4).arrayBuffer());
  if (head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
  if (head[0] === 0x28 && head[1] === 0xb5 && head[2] === 0x2f && head[3] === 0xfd) return 'zstd';
  if (head[0] === 0x42 && head[1] === 0x5a && head[2] === 0x68) return 'bz2';
  if (head[0] === 0xfd && head[1] === 0x37 && head[2] === 0x7a && head[3] === 0x58) return 'xz';
  return null;
}

async function* plainChunks(file, progress) {
  for (let off = 0; off < file.size; off += CHUNK) {
    const buf = await file.slice(off, off + CHUNK).arrayBuffer();
    progress(Math.min(off + CHUNK, file.size));
    yield new Uint8Array(buf);
  }
}

async function* gzipChunks(file, progress) {
  let consumed = 0;
  const counter = new TransformStream({
    transform(chunk, ctl) { consumed += chunk.byteLength; ctl.enqueue(chunk); },
  });
  const reader = file.stream().pipeThrough(counter).pipeThrough(new DecompressionStream('gzip')).getReader();
  let parts = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    size += value.byteLength;
    if (size >= CHUNK) {
      progress(consumed);
      yield concat(parts, size);
      parts = [];
      size = 0;
    }
  }
  progress(file.size);
  if (size) yield concat(parts, size);
}

function concat(parts, size) {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.byteLength; }
  return out;
}

function toBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

async function reduceFile(job, file, lib, options) {
  const progress = (done) => postMessage({ type: 'progress', job, done, total: file.size });
  const kind = await magic(file);
  const base = { name: file.name, size: file.size, compressed: kind };
  if (kind === 'zstd' || kind === 'bz2' || kind === 'xz') {
    // The browser cannot decompress these: send the bytes as they are (the server reads them).
    const bytes = new Uint8Array(await file.arrayBuffer());
    return { ...base, mode: 'raw', base64: toBase64(bytes), sentBytes: Math.ceil(bytes.length / 3) * 4,
      totalLines: null, keptLines: null, redactions: {}, truncated: false };
  }
  const wholeLimit = options.wholeLimit === undefined ? WHOLE_LIMIT : options.wholeLimit;
  const reducer = new Reducer(lib.keywords, lib.keepEveryLine, lib.progress, lib.prefixes, wholeLimit);
  const decoder = new TextDecoder('utf-8');
  let carry = '';
  const chunks = kind === 'gzip' ? gzipChunks(file, progress) : plainChunks(file, progress);
  for await (const bytes of chunks) {
    const text = carry + decoder.decode(bytes, { stream: true });
    const cut = text.lastIndexOf('\n');
    if (cut < 0) { carry = text; continue; }
    carry = text.slice(cut + 1);
    const body = text.slice(0, cut + 1);
    const lines = body.split('\n');
    lines.pop();
    reducer.feed(body, lines);
  }
  carry += decoder.decode();
  if (carry) reducer.feed(carry, [carry]);
  const counts = {};
  const clean = (t) => redact(t.endsWith('\r') ? t.slice(0, -1) : t, options.hosts, counts, lib.prefixes);
  const totalLines = reducer.n;
  if (reducer.whole !== null) {
    const text = reducer.whole.map(clean).join('\n');
    return { ...base, mode: 'whole', text, sentBytes: new Blob([text]).size, totalLines, keptLines: totalLines,
      redactions: counts, truncated: false };
  }
  const lines = reducer.finish().map(([n, t]) => [n, clean(t)]);
  const sentBytes = lines.reduce((a, [n, t]) => a + t.length + String(n).length + 6, 0);
  return { ...base, mode: 'reduced', lines, sentBytes, totalLines, keptLines: lines.length,
    redactions: counts, truncated: reducer.truncated };
}

let queue = Promise.resolve();

self.onmessage = (ev) => {
  const msg = ev.data;
  if (msg.type === 'reset') {
    hostNames = new Map();
    ipNames = new Map();
    return;
  }
  if (msg.type !== 'reduce') return;
  queue = queue.then(async () => {
    try {
      const lib = { keywords: msg.keywords, keepEveryLine: msg.keepEveryLine, progress: compileAll(msg.progress),
        prefixes: compilePrefixes(msg.prefixes) };
      const result = await reduceFile(msg.job, msg.file, lib, msg.options || {});
      postMessage({ type: 'done', job: msg.job, result });
    } catch (e) {
      postMessage({ type: 'error', job: msg.job, message: String((e && e.message) || e) });
    }
  });
};
