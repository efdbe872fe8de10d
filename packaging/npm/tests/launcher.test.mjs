// `npx cfq`: the launcher of the installed package runs the platform's
// binary, passes its exit code and SIGTERM through, and honours CFQ_BINARY.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { test } from 'node:test';

const require = createRequire(import.meta.url);
const launcher = join(dirname(require.resolve('cfq/package.json')), 'bin', 'cfq.js');
const { binaryPath } = require('cfq');

function cfq(args, env = {}) {
  return spawnSync(process.execPath, [launcher, ...args], {
    encoding: 'utf8',
    env: { ...process.env, CLOUDFLARE_API_TOKEN: '', CLOUDFLARE_API_KEY: '', CFQ_QUEUE: '', ...env },
  });
}

test('the version is the crate\'s', () => {
  const run = cfq(['--version']);
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout.trim(), `cfq ${process.env.CFQ_CRATE_VERSION}`);
});

test('the exit code passes through', () => {
  const run = cfq(['metrics', '--queue', 'orders'], { CLOUDFLARE_ACCOUNT_ID: '0123456789abcdef0123456789abcdef' });
  assert.equal(run.status, 2, run.stderr);
  assert.match(run.stderr, /credentials|CLOUDFLARE_API_TOKEN/);
});

test('CFQ_BINARY names the binary to run instead', () => {
  const missing = cfq(['--version'], { CFQ_BINARY: '/no/such/cfq' });
  assert.equal(missing.status, 1);
  assert.equal(missing.stderr, 'cfq: CFQ_BINARY names /no/such/cfq, which does not exist\n');
  const given = cfq(['--version'], { CFQ_BINARY: binaryPath() });
  assert.equal(given.status, 0);
});

test('SIGTERM to the launcher stops cfq in order', async () => {
  const child = spawn(process.execPath, [launcher, 'emulator', '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8');
  await new Promise((resolve) =>
    child.stdout.on('data', (text) => {
      out += text;
      if (out.includes('press Ctrl-C to stop')) resolve();
    }),
  );
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  child.kill('SIGTERM');
  assert.deepEqual(await exited, { code: 0, signal: null });
  assert.match(out, /stopping\n$/);
});
