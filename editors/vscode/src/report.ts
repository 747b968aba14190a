// The report panel's logic: parse the diagnosis JSON (schema trainmedic.diagnosis/v1), escape every
// string that came from a log, and build the HTML. No `vscode` import here, so `node --test` runs it.

import { randomBytes } from 'node:crypto';

export const SCHEMA = 'trainmedic.diagnosis/v1';

export type Verdict = 'failure' | 'hang' | 'healthy';

export interface Evidence {
  path: string;
  line: number;
  rank: number | null;
  text: string;
}

export interface MissingFact {
  fact: string;
  command: string;
}

export interface Finding {
  id: string;
  title: string;
  category: string;
  confidence: number;
  rank: number | null;
  host: string | null;
  why: string;
  evidence: Evidence[];
  fix: string[];
  verify: string[];
  missing: MissingFact[];
}

export interface Alternative {
  id: string;
  confidence: number;
  why: string;
}

export interface Collateral {
  id: string;
  rank: number | null;
  path: string;
  line: number;
  explained_by: string;
}

export interface InputSummary {
  path: string;
  bytes: number;
  lines: number;
  ranks: number[];
}

export interface Diagnosis {
  schema: string;
  verdict: Verdict;
  primary: Finding | null;
  alternatives: Alternative[];
  collateral: Collateral[];
  inputs: InputSummary[];
  notes: string[];
}

export class ReportError extends Error {}

type Obj = Record<string, unknown>;

function obj(value: unknown, where: string): Obj {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ReportError(`${where}: expected an object`);
  }
  return value as Obj;
}

function str(o: Obj, key: string, where: string): string {
  const v = o[key];
  if (typeof v !== 'string') {
    throw new ReportError(`${where}.${key}: expected a string`);
  }
  return v;
}

function optStr(o: Obj, key: string): string {
  const v = o[key];
  return typeof v === 'string' ? v : '';
}

function num(o: Obj, key: string, where: string): number {
  const v = o[key];
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new ReportError(`${where}.${key}: expected a number`);
  }
  return v;
}

function rank(o: Obj, key: string): number | null {
  const v = o[key];
  return typeof v === 'number' && Number.isInteger(v) ? v : null;
}

function list<T>(o: Obj, key: string, where: string, item: (v: unknown, at: string) => T): T[] {
  const v = o[key];
  if (v === undefined || v === null) {
    return [];
  }
  if (!Array.isArray(v)) {
    throw new ReportError(`${where}.${key}: expected a list`);
  }
  return v.map((x, i) => item(x, `${where}.${key}[${i}]`));
}

function text(v: unknown, at: string): string {
  if (typeof v !== 'string') {
    throw new ReportError(`${at}: expected a string`);
  }
  return v;
}

function finding(v: unknown, at: string): Finding {
  const o = obj(v, at);
  return {
    id: str(o, 'id', at),
    title: str(o, 'title', at),
    category: optStr(o, 'category'),
    confidence: num(o, 'confidence', at),
    rank: rank(o, 'rank'),
    host: typeof o['host'] === 'string' ? o['host'] : null,
    why: optStr(o, 'why'),
    evidence: list(o, 'evidence', at, (e, w) => {
      const eo = obj(e, w);
      return { path: str(eo, 'path', w), line: num(eo, 'line', w), rank: rank(eo, 'rank'), text: str(eo, 'text', w) };
    }),
    fix: list(o, 'fix', at, text),
    verify: list(o, 'verify', at, text),
    missing: list(o, 'missing', at, (m, w) => {
      const mo = obj(m, w);
      return { fact: str(mo, 'fact', w), command: str(mo, 'command', w) };
    }),
  };
}

/** Check the shape of what the server returned; the panel renders only what passed. */
export function parseDiagnosis(value: unknown): Diagnosis {
  const o = obj(value, 'diagnosis');
  const schema = str(o, 'schema', 'diagnosis');
  if (schema !== SCHEMA) {
    throw new ReportError(`unsupported schema ${JSON.stringify(schema)}; this extension reads ${SCHEMA}`);
  }
  const verdict = str(o, 'verdict', 'diagnosis');
  if (verdict !== 'failure' && verdict !== 'hang' && verdict !== 'healthy') {
    throw new ReportError(`unknown verdict ${JSON.stringify(verdict)}`);
  }
  return {
    schema,
    verdict,
    primary: o['primary'] === null || o['primary'] === undefined ? null : finding(o['primary'], 'diagnosis.primary'),
    alternatives: list(o, 'alternatives', 'diagnosis', (a, w) => {
      const ao = obj(a, w);
      return { id: str(ao, 'id', w), confidence: num(ao, 'confidence', w), why: optStr(ao, 'why') };
    }),
    collateral: list(o, 'collateral', 'diagnosis', (c, w) => {
      const co = obj(c, w);
      return {
        id: str(co, 'id', w),
        rank: rank(co, 'rank'),
        path: str(co, 'path', w),
        line: num(co, 'line', w),
        explained_by: optStr(co, 'explained_by'),
      };
    }),
    inputs: list(o, 'inputs', 'diagnosis', (i, w) => {
      const io = obj(i, w);
      return {
        path: str(io, 'path', w),
        bytes: num(io, 'bytes', w),
        lines: num(io, 'lines', w),
        ranks: list(io, 'ranks', w, (r, at) => {
          if (typeof r !== 'number') {
            throw new ReportError(`${at}: expected a number`);
          }
          return r;
        }),
      };
    }),
    notes: list(o, 'notes', 'diagnosis', text),
  };
}

export interface OpenPage {
  id: string;
  url: string | null;
  text: string;
}

/** The result of `trainmedic.openEncyclopedia` with `{show: false}`. */
export function parseOpenPage(value: unknown): OpenPage {
  const o = obj(value, 'page');
  const url = o['url'];
  return { id: str(o, 'id', 'page'), url: typeof url === 'string' && url ? url : null, text: str(o, 'text', 'page') };
}

export type PanelMessage = { type: 'copy'; text: string } | { type: 'open'; id: string };

/** Messages from the webview are untrusted input too: accept only the two known shapes. */
export function parseMessage(value: unknown): PanelMessage | null {
  if (typeof value !== 'object' || value === null) {
    return null;
  }
  const o = value as Obj;
  if (o['type'] === 'copy' && typeof o['text'] === 'string') {
    return { type: 'copy', text: o['text'] };
  }
  if (o['type'] === 'open' && typeof o['id'] === 'string' && /^[a-z0-9-]+(\/[a-z0-9-]+)?$/.test(o['id'])) {
    return { type: 'open', id: o['id'] };
  }
  return null;
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escape for HTML text and quoted attribute values alike. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

export function makeNonce(): string {
  return randomBytes(18).toString('base64').replace(/[+/=]/g, '');
}

/** Nothing but our own inline style and script, each carrying the nonce: no remote resources. */
export function contentSecurityPolicy(nonce: string): string {
  return `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src 'none'; connect-src 'none'; form-action 'none'`;
}

/** The end of a long text (a terminal buffer): failures are at the end, and whole lines read better. */
export function tailText(s: string, maxChars: number): string {
  if (s.length <= maxChars) {
    return s;
  }
  const cut = s.length - maxChars;
  const nl = s.indexOf('\n', cut);
  return nl >= 0 && nl + 1 < s.length ? s.slice(nl + 1) : s.slice(cut);
}

const HEADLINES: Record<Verdict, string> = {
  failure: 'The run failed',
  hang: 'The run stalled',
  healthy: 'No failure found',
};

const STYLE = `
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 1.2em 2em; line-height: 1.45; }
h1 { font-size: 1.4em; margin-bottom: .2em; }
h2 { font-size: 1.1em; margin-top: 1.6em; border-bottom: 1px solid var(--vscode-panel-border, #8884); }
.id, code, pre { font-family: var(--vscode-editor-font-family); }
.meta { opacity: .8; }
pre { background: var(--vscode-textCodeBlock-background, #8882); padding: .5em .7em; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
ul.cmds { list-style: none; padding-left: 0; }
ul.cmds li { display: flex; gap: .6em; align-items: baseline; margin: .3em 0; }
button { color: var(--vscode-button-foreground); background: var(--vscode-button-background); border: none; padding: .2em .7em; cursor: pointer; }
button:hover { background: var(--vscode-button-hoverBackground); }
table { border-collapse: collapse; }
td, th { text-align: left; padding: .15em .8em .15em 0; vertical-align: top; }
`;

const SCRIPT = `
const vscode = acquireVsCodeApi();
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('button') : null;
  if (!button) { return; }
  if (button.dataset.copy !== undefined) { vscode.postMessage({ type: 'copy', text: button.dataset.copy }); }
  else if (button.dataset.open !== undefined) { vscode.postMessage({ type: 'open', id: button.dataset.open }); }
});
`;

function rankLabel(r: number | null): string {
  return r === null ? 'rank ?' : `rank ${r}`;
}

function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}

function commands(cmds: string[]): string {
  const items = cmds.map(
    (c) => `<li><button data-copy="${escapeHtml(c)}" title="Copy">Copy</button><code>${escapeHtml(c)}</code></li>`,
  );
  return `<ul class="cmds">${items.join('')}</ul>`;
}

function page(title: string, nonce: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(nonce)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
${body}
<script nonce="${nonce}">${SCRIPT}</script>
</body>
</html>
`;
}

export interface RenderOptions {
  /** Where the text came from ("selection in train.log", "terminal bash"), shown under the headline. */
  source: string;
  nonce: string;
  /** Collateral rows beyond this are summarised, so a 10 000-rank job stays readable. */
  maxCollateral?: number;
}

/** The whole report panel: headline, initiating failure, fix, verify, alternatives, collateral. */
export function renderReport(d: Diagnosis, opts: RenderOptions): string {
  const out: string[] = [];
  const p = d.primary;
  out.push(`<h1>${HEADLINES[d.verdict]}</h1>`);
  out.push(`<p class="meta">trainmedic · ${escapeHtml(opts.source)}</p>`);
  if (p === null) {
    out.push('<p>No initiating failure, collateral failure or stall was found in this text.</p>');
  } else {
    out.push(`<h2>${escapeHtml(p.title)}</h2>`);
    const where = [rankLabel(p.rank), ...(p.host ? [`host ${p.host}`] : []), `confidence ${pct(p.confidence)}`];
    out.push(`<p><span class="id">${escapeHtml(p.id)}</span> · ${escapeHtml(where.join(' · '))}</p>`);
    if (p.why) {
      out.push(`<p>${escapeHtml(p.why)}</p>`);
    }
    out.push(`<p><button data-open="${escapeHtml(p.id)}">Open the encyclopedia page</button></p>`);
    if (p.evidence.length > 0) {
      const lines = p.evidence.map((e) => `${e.path}:${e.line} [${rankLabel(e.rank)}] ${e.text}`);
      out.push(`<h2>Evidence</h2><pre>${escapeHtml(lines.join('\n'))}</pre>`);
    }
    if (p.fix.length > 0) {
      out.push(`<h2>Fix</h2><ol>${p.fix.map((s) => `<li>${escapeHtml(s)}</li>`).join('')}</ol>`);
    }
    if (p.verify.length > 0) {
      out.push(`<h2>Verify</h2>${commands(p.verify)}`);
    }
    if (p.missing.length > 0) {
      out.push('<h2>Missing facts</h2><p>The log alone cannot decide; these commands can:</p>');
      out.push(
        `<ul class="cmds">${p.missing
          .map(
            (m) =>
              `<li><button data-copy="${escapeHtml(m.command)}">Copy</button><span>${escapeHtml(m.fact)}: ` +
              `<code>${escapeHtml(m.command)}</code></span></li>`,
          )
          .join('')}</ul>`,
      );
    }
  }
  if (d.alternatives.length > 0) {
    const rows = d.alternatives.map(
      (a) => `<tr><td class="id">${escapeHtml(a.id)}</td><td>${pct(a.confidence)}</td><td>${escapeHtml(a.why)}</td></tr>`,
    );
    out.push(`<h2>Alternatives</h2><table>${rows.join('')}</table>`);
  }
  if (d.collateral.length > 0) {
    const max = opts.maxCollateral ?? 200;
    const shown = d.collateral.slice(0, max);
    const rows = shown.map(
      (c) =>
        `<tr><td>${escapeHtml(rankLabel(c.rank))}</td><td class="id">${escapeHtml(c.id)}</td>` +
        `<td>${escapeHtml(`${c.path}:${c.line}`)}</td></tr>`,
    );
    out.push(`<h2>Collateral (${d.collateral.length})</h2>`);
    out.push('<p>Consequences of the initiating failure, not causes: fix that first.</p>');
    out.push(`<table>${rows.join('')}</table>`);
    if (d.collateral.length > max) {
      out.push(`<p>… and ${d.collateral.length - max} more.</p>`);
    }
  }
  for (const note of d.notes) {
    out.push(`<blockquote>${escapeHtml(note)}</blockquote>`);
  }
  if (d.inputs.length > 0) {
    const inputs = d.inputs.map((i) => `${i.path} (${i.lines} lines${i.ranks.length ? `, ranks ${i.ranks.join(', ')}` : ''})`);
    out.push(`<p class="meta">Inputs: ${escapeHtml(inputs.join('; '))}</p>`);
  }
  return page(`trainmedic: ${HEADLINES[d.verdict]}`, opts.nonce, out.join('\n'));
}

/** `trainmedic explain` text in a panel, for when no local encyclopedia site is configured. */
export function renderExplain(id: string, body: string, nonce: string): string {
  return page(`trainmedic explain ${id}`, nonce, `<h1 class="id">${escapeHtml(id)}</h1><pre>${escapeHtml(body)}</pre>`);
}

/** A short error page, so a failed diagnosis still says what went wrong and what to do. */
export function renderError(message: string, nonce: string): string {
  return page('trainmedic: error', nonce, `<h1>trainmedic could not diagnose this</h1><pre>${escapeHtml(message)}</pre>`);
}
