// The start-up lines of `cfq emulator` as the installed package reads them
// (version 1 of their contract), on literal text, and startEmulator
// refusing a version it does not know. Needs no cfq binary.

import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { test } from 'node:test';

const require = createRequire(import.meta.url);
const { readStartLines } = require(join(dirname(require.resolve('cfq/package.json')), 'lib', 'start-lines.js'));
const { startEmulator } = require('cfq');

const BASE = 'http://127.0.0.1:8787/client/v4';
const ACCOUNT = '0123456789abcdef0123456789abcdef';
const DASHBOARD = 'http://127.0.0.1:8787/_dashboard/login?key=k3y';
const VERSION_1 = `cf-queues emulator listening on ${BASE}
  export CLOUDFLARE_BASE_URL=${BASE}
  export CLOUDFLARE_API_TOKEN=t0ken
  export CLOUDFLARE_ACCOUNT_ID=${ACCOUNT}
  queue orders: 11111111111111111111111111111111
  queue orders-dlq: 22222222222222222222222222222222
  dashboard: ${DASHBOARD}
  start-up lines: version 1
press Ctrl-C to stop
stopping
`;

/** The lines read from a stream that gives `text` a few bytes at a time. */
function read(text) {
  const bytes = Buffer.from(text);
  const chunks = [];
  for (let at = 0; at < bytes.length; at += 7) chunks.push(bytes.subarray(at, at + 7));
  return readStartLines(Readable.from(chunks, { objectMode: false }));
}

test('version 1: every line read', async () => {
  assert.deepEqual(await read(VERSION_1), {
    baseUrl: BASE,
    accountId: ACCOUNT,
    apiToken: 't0ken',
    dashboardUrl: DASHBOARD,
    queues: { orders: '11111111111111111111111111111111', 'orders-dlq': '22222222222222222222222222222222' },
    version: 1,
  });
});

test('no version line (cfq 0.3 and earlier) is version 1; no token, no dashboard', async () => {
  const text = `cf-queues emulator listening on ${BASE}
  export CLOUDFLARE_BASE_URL=${BASE}
  export CLOUDFLARE_ACCOUNT_ID=${ACCOUNT}
press Ctrl-C to stop
`;
  assert.deepEqual(await read(text), { baseUrl: BASE, accountId: ACCOUNT, queues: {}, version: 1 });
});

test('lines not known are skipped, surrounding whitespace and CRLF too', async () => {
  const text = VERSION_1.replace('  dashboard:', '  export CLOUDFLARE_SOMETHING_NEW=1\n  a line of version 1.1: yes\n  dashboard:')
    .replaceAll('\n', ' \r\n');
  const lines = await read(text);
  assert.equal(lines.baseUrl, BASE);
  assert.equal(lines.dashboardUrl, DASHBOARD);
  assert.deepEqual(Object.keys(lines.queues), ['orders', 'orders-dlq']);
});

test('version 2 is refused, naming both versions', async () => {
  await assert.rejects(read(VERSION_1.replace('version 1', 'version 2')), {
    name: 'StartLinesError',
    message: /start-up lines of version 2, and this cfq package reads version 1/,
  });
});

test('no ready line: not ready', async () => {
  const text = VERSION_1.slice(0, VERSION_1.indexOf('press Ctrl-C'));
  await assert.rejects(read(text), { name: 'StartLinesError', ready: false });
  await assert.rejects(read(VERSION_1.replace('press Ctrl-C to stop', 'press Ctrl-C to stop!')), { ready: false });
});

test('a ready line without the base URL is refused', async () => {
  await assert.rejects(read(VERSION_1.replace(/.*export CLOUDFLARE_BASE_URL.*\n/, '')), {
    name: 'StartLinesError',
    message: /ready without export CLOUDFLARE_BASE_URL=/,
  });
});

test('startEmulator refuses a cfq that prints another version of the lines', {
  skip: process.platform === 'win32' && 'a shell script stands in for cfq',
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cfq-lines-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const binary = join(dir, 'cfq');
  writeFileSync(binary, `#!/bin/sh\nprintf '%s' '${VERSION_1.replace('version 1', 'version 2')}'\nexec sleep 60\n`);
  chmodSync(binary, 0o755);
  await assert.rejects(startEmulator({ binary, startTimeoutMs: 5_000 }), {
    message: /^cfq emulator prints start-up lines of version 2, and this cfq package reads version 1/,
  });
});

test('startEmulator says that a cfq which stops before its ready line exited', {
  skip: process.platform === 'win32' && 'a shell script stands in for cfq',
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cfq-lines-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const binary = join(dir, 'cfq');
  writeFileSync(binary, `#!/bin/sh\necho '  export CLOUDFLARE_BASE_URL=${BASE}'\nexit 4\n`);
  chmodSync(binary, 0o755);
  await assert.rejects(startEmulator({ binary, startTimeoutMs: 5_000 }), {
    message: /^cfq emulator exited before it was ready \(exit code 4\)/,
  });
});
