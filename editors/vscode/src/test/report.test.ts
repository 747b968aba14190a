// Unit tests of the report panel's pure logic, run with plain Node: `node --test out/test/`.

import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  ReportError,
  contentSecurityPolicy,
  escapeHtml,
  parseDiagnosis,
  parseMessage,
  parseOpenPage,
  renderExplain,
  renderReport,
  tailText,
} from '../report';

// What `trainmedic.diagnoseText` returns for the 4-rank log of tests/lsp (trimmed), plus hostile text.
const SAMPLE = {
  schema: 'trainmedic.diagnosis/v1',
  verdict: 'failure',
  primary: {
    id: 'dataloader-worker-failure/shm-exhausted',
    title: 'DataLoader worker failure: /dev/shm too small for the batches in flight',
    category: 'data-pipeline',
    confidence: 0.99,
    rank: 2,
    host: null,
    time: null,
    why: 'first initiating failure, at rank 2, ddp-4ranks.log:13',
    evidence: [
      {
        path: 'ddp-4ranks.log',
        line: 13,
        rank: 2,
        text: 'ERROR: Unexpected bus error encountered in worker. <script>alert("x")</script>',
      },
    ],
    fix: ['Docker: restart the container with a larger /dev/shm: `docker run --shm-size=16g ...`'],
    verify: ['df -h /dev/shm', `python -c "import torch; print('x')"`],
    missing: [],
  },
  alternatives: [{ id: 'host-oom/oom-killer', confidence: 0.1, why: 'not confirmed <b>here</b>' }],
  collateral: [
    { id: 'nccl-timeout/watchdog-timeout', rank: 0, path: 'ddp-4ranks.log', line: 31, explained_by: 'x' },
    { id: 'nccl-timeout/watchdog-timeout', rank: 1, path: 'ddp-4ranks.log', line: 32, explained_by: 'x' },
    { id: 'nccl-timeout/watchdog-timeout', rank: 3, path: 'ddp-4ranks.log', line: 33, explained_by: 'x' },
  ],
  inputs: [{ path: 'ddp-4ranks.log', bytes: 4046, lines: 33, ranks: [0, 1, 2, 3] }],
  progress: [],
  facts: [],
  notes: [],
};

describe('parseDiagnosis', () => {
  it('reads the v1 schema', () => {
    const d = parseDiagnosis(SAMPLE);
    assert.equal(d.verdict, 'failure');
    assert.equal(d.primary?.id, 'dataloader-worker-failure/shm-exhausted');
    assert.equal(d.primary?.rank, 2);
    assert.deepEqual(
      d.collateral.map((c) => c.rank),
      [0, 1, 3],
    );
  });

  it('reads a healthy diagnosis', () => {
    const d = parseDiagnosis({ ...SAMPLE, verdict: 'healthy', primary: null, collateral: [], alternatives: [] });
    assert.equal(d.primary, null);
  });

  it('refuses other schemas and broken shapes with a message', () => {
    assert.throws(() => parseDiagnosis({ ...SAMPLE, schema: 'trainmedic.diagnosis/v9' }), /unsupported schema/);
    assert.throws(() => parseDiagnosis({ ...SAMPLE, verdict: 'maybe' }), ReportError);
    assert.throws(() => parseDiagnosis({ ...SAMPLE, primary: { ...SAMPLE.primary, fix: 'one' } }), /fix: expected a list/);
    assert.throws(() => parseDiagnosis('{}'), /expected an object/);
  });
});

describe('renderReport', () => {
  const html = renderReport(parseDiagnosis(SAMPLE), { source: 'ddp-4ranks.log', nonce: 'abc123' });

  it('shows the initiating failure, its fix, verify commands and collateral', () => {
    assert.match(html, /The run failed/);
    assert.match(html, /dataloader-worker-failure\/shm-exhausted/);
    assert.match(html, /rank 2 · confidence 99%/);
    assert.match(html, /<h2>Fix<\/h2>/);
    assert.match(html, /data-copy="df -h \/dev\/shm"/);
    assert.match(html, /Collateral \(3\)/);
    assert.match(html, /data-open="dataloader-worker-failure\/shm-exhausted"/);
  });

  it('escapes every string from the log or the server', () => {
    assert.ok(!html.includes('<script>alert'));
    assert.ok(html.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'));
    assert.ok(!html.includes('<b>here</b>'));
    assert.ok(html.includes(`data-copy="python -c &quot;import torch; print(&#39;x&#39;)&quot;"`));
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });

  it('loads nothing remote and runs only nonce-carrying inline code', () => {
    assert.ok(html.includes(`content="${contentSecurityPolicy('abc123')}"`));
    assert.match(contentSecurityPolicy('n'), /default-src 'none'/);
    assert.ok(!/\b(src|href)=/.test(html), 'no src or href attributes at all');
    assert.ok(!/https?:\/\//.test(html));
    const scripts = html.match(/<script[^>]*>/g) ?? [];
    assert.deepEqual(scripts, ['<script nonce="abc123">']);
  });

  it('summarises huge collateral lists', () => {
    const many = {
      ...SAMPLE,
      collateral: Array.from({ length: 1000 }, (_, i) => ({ ...SAMPLE.collateral[0], rank: i, line: i + 1 })),
    };
    const big = renderReport(parseDiagnosis(many), { source: 'x', nonce: 'n', maxCollateral: 10 });
    assert.match(big, /… and 990 more\./);
  });

  it('says so when nothing failed', () => {
    const healthy = parseDiagnosis({ ...SAMPLE, verdict: 'healthy', primary: null, collateral: [], alternatives: [] });
    assert.match(renderReport(healthy, { source: 'x', nonce: 'n' }), /No failure found/);
  });
});

describe('panel helpers', () => {
  it('accepts only known webview messages', () => {
    assert.deepEqual(parseMessage({ type: 'copy', text: 'df -h /dev/shm' }), { type: 'copy', text: 'df -h /dev/shm' });
    assert.deepEqual(parseMessage({ type: 'open', id: 'nccl-timeout/watchdog-timeout' }), {
      type: 'open',
      id: 'nccl-timeout/watchdog-timeout',
    });
    assert.equal(parseMessage({ type: 'open', id: '../../etc/passwd' }), null);
    assert.equal(parseMessage({ type: 'run', command: 'rm -rf /' }), null);
    assert.equal(parseMessage('copy'), null);
  });

  it('reads the open-page result and renders explain text escaped', () => {
    assert.deepEqual(parseOpenPage({ id: 'a/b', url: null, text: 't' }), { id: 'a/b', url: null, text: 't' });
    assert.equal(parseOpenPage({ id: 'a/b', url: 'file:///site/a/index.html#b', text: '' }).url, 'file:///site/a/index.html#b');
    assert.match(renderExplain('a/b', 'use <shm>', 'n'), /use &lt;shm&gt;/);
  });

  it('keeps the end of a long terminal buffer, from a line start', () => {
    assert.equal(tailText('short', 10), 'short');
    assert.equal(tailText('line one\nline two\nboom\n', 12), 'boom\n');
  });

  it('keeps the report module free of the vscode API, so these tests run under plain Node', () => {
    const compiled = readFileSync(path.join(__dirname, '..', 'report.js'), 'utf8');
    assert.ok(!/require\(["']vscode["']\)/.test(compiled));
  });
});
