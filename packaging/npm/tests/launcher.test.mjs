// `npx cfq`: the launcher of the installed package runs the platform's
// binary, passes its exit code, the signal that killed it and SIGTERM
// through, and honours CFQ_BINARY.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants, tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { test } from 'node:test';

const require = createRequire(import.meta.url);
const packageDir = dirname(require.resolve('cfq/package.json'));
const launcher = join(packageDir, 'bin', 'cfq.js');
const { binaryPath } = require('cfq');
const { readStartLines } = require(join(packageDir, 'lib', 'start-lines.js'));
const shellScripts = { skip: process.platform === 'win32' && 'shell scripts stand in for cfq' };

function cfq(args, env = {}, cwd = undefined) {
  return spawnSync(process.execPath, [launcher, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, CLOUDFLARE_API_TOKEN: '', CLOUDFLARE_API_KEY: '', CFQ_QUEUE: '', ...env },
  });
}

/** A fresh directory for a test, removed after it. */
function scratch(t) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'cfq-launcher-')));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** An executable `#!/bin/sh` script: a stand-in for cfq. */
function script(file, body) {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
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

test('a cfq exiting 3 makes the launcher exit 3', shellScripts, (t) => {
  const run = cfq([], { CFQ_BINARY: script(join(scratch(t), 'cfq'), 'exit 3') });
  assert.deepEqual([run.status, run.signal], [3, null], run.stderr);
});

test('a cfq killed by SIGTERM kills the launcher with SIGTERM', shellScripts, (t) => {
  const run = cfq([], { CFQ_BINARY: script(join(scratch(t), 'cfq'), 'kill -TERM $$') });
  assert.deepEqual([run.status, run.signal], [null, 'SIGTERM'], run.stderr);
});

test('a cfq killed by a signal Node survives: the launcher exits 128 + its number', shellScripts, (t) => {
  const dir = scratch(t);
  // Node starts its inspector on SIGUSR1 and ignores SIGPIPE: raised on
  // the launcher, either would leave it exiting 0. (138 and 141 on Linux.)
  for (const signal of ['SIGUSR1', 'SIGPIPE']) {
    const binary = script(join(dir, signal, 'cfq'), `kill -${signal.slice(3)} $$`);
    const run = cfq([], { CFQ_BINARY: binary });
    assert.deepEqual([run.status, run.signal], [128 + constants.signals[signal], null], `${signal}: ${run.stderr}`);
    assert.doesNotMatch(run.stderr, /Debugger listening/, `${signal} opened no inspector port`);
  }
});

test('CFQ_BINARY names the binary to run instead', () => {
  const missing = cfq(['--version'], { CFQ_BINARY: '/no/such/cfq' });
  assert.equal(missing.status, 1);
  assert.equal(missing.stderr, 'cfq: CFQ_BINARY names /no/such/cfq, which does not exist\n');
  const given = cfq(['--version'], { CFQ_BINARY: binaryPath() });
  assert.equal(given.status, 0);
});

test('a relative CFQ_BINARY is the file in the current directory, not a cfq in PATH', shellScripts, (t) => {
  const dir = scratch(t);
  const here = script(join(dir, 'here', 'cfq'), 'echo the one here');
  script(join(dir, 'in-path', 'cfq'), 'echo the one in PATH');
  const env = { CFQ_BINARY: 'cfq', PATH: `${join(dir, 'in-path')}${delimiter}${process.env.PATH}` };
  const run = cfq([], env, dirname(here));
  assert.equal(run.stdout, 'the one here\n', run.stderr);
  // startEmulator runs what binaryPath() says: that same file.
  const said = spawnSync(process.execPath, ['-p', `require(${JSON.stringify(require.resolve('cfq'))}).binaryPath()`], {
    cwd: dirname(here),
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  assert.equal(said.stdout.trim(), here, said.stderr);
});

test('SIGTERM to the launcher stops cfq in order', async () => {
  const child = spawn(process.execPath, [launcher, 'emulator', '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ready = readStartLines(child.stdout);
  let out = '';
  child.stdout.on('data', (text) => {
    out += text;
  });
  await ready;
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  child.kill('SIGTERM');
  assert.deepEqual(await exited, { code: 0, signal: null });
  assert.match(out, /stopping\n$/);
});
