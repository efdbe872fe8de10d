'use strict';
// startEmulator(): `cfq emulator` as a child of the test process, on a
// free loopback port with a fresh token, resolved once it answers.

const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { binaryPath, platformPackage } = require('./lib/binary.js');
const { readStartLines } = require('./lib/start-lines.js');

/** How long `startEmulator` waits for the emulator to answer, by default. */
const START_TIMEOUT_MS = 30_000;
/** How long `stop()` waits after closing stdin before SIGTERM, then SIGKILL. */
const STOP_GRACE_MS = 10_000;
/** The most of the emulator's stderr kept for an error message. */
const KEPT_STDERR_CHARS = 4_000;

/**
 * Starts `cfq emulator` and resolves once it answers.
 * @param {import('./index').EmulatorOptions} [options]
 * @returns {Promise<import('./index').RunningEmulator>}
 */
async function startEmulator(options = {}) {
  const token = options.apiToken || `cfq-test-${randomBytes(16).toString('hex')}`;
  const args = [
    'emulator', '--listen', options.listen || '127.0.0.1:0', '--token', token,
    '--stop-on-stdin-close', '--stop-with-parent',
  ];
  if (options.dataDir) args.push('--data-dir', String(options.dataDir));
  if (options.config) args.push('--config', String(options.config));
  if (options.rateLimits) args.push('--rate-limits', options.rateLimits);
  if (options.latency) args.push('--latency', options.latency);
  if (options.args) args.push(...options.args);
  const binary = options.binary || binaryPath();
  // stdin stays open and unused: closing it is stop()'s way to stop the
  // emulator in order (`--stop-on-stdin-close`). When this process dies,
  // however it dies, the emulator sees its parent go (`--stop-with-parent`),
  // even if a process this one started still holds the pipe.
  const child = spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text) => {
    stderr = (stderr + text).slice(-KEPT_STDERR_CHARS);
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const failed = (why) =>
    new Error(`${why}${stderr.trim() ? `:\n${stderr.trim()}` : ''} (binary ${binary}, package ${platformPackage()})`);
  const exitedBeforeReady = () =>
    exited.then(({ code, signal }) => {
      throw failed(`cfq emulator exited before it was ready (${signal || `exit code ${code}`})`);
    });
  const timeoutMs = options.startTimeoutMs || START_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  try {
    const printed = await Promise.race([
      readStartLines(child.stdout).catch((error) => {
        // Its stdout ended: it is exiting, and its exit says more.
        if (error.ready === false) return exitedBeforeReady();
        throw failed(error.message);
      }),
      exitedBeforeReady(),
      after(timeoutMs).then(() => {
        throw failed(`cfq emulator was not ready within ${timeoutMs} ms`);
      }),
    ]);
    await Promise.race([
      answers(printed, token, deadline),
      exited.then(({ code, signal }) => {
        throw failed(`cfq emulator exited before it answered (${signal || `exit code ${code}`})`);
      }),
    ]);
    // Nothing of the emulator keeps the test process alive: a run that
    // forgets stop() still ends, and the emulator with it.
    for (const stream of [child.stdin, child.stdout, child.stderr]) stream.unref?.();
    child.unref();
    let stopping;
    const stop = () => {
      stopping ||= stopChild(child, exited);
      return stopping;
    };
    return {
      baseUrl: printed.baseUrl,
      accountId: printed.accountId,
      apiToken: token,
      dashboardUrl: printed.dashboardUrl,
      env: {
        CLOUDFLARE_BASE_URL: printed.baseUrl,
        CLOUDFLARE_API_BASE_URL: printed.baseUrl,
        CLOUDFLARE_API_TOKEN: token,
        CLOUDFLARE_ACCOUNT_ID: printed.accountId,
      },
      pid: child.pid,
      stop,
    };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

/** Resolves once the emulator answers an authenticated list of queues with 200. */
async function answers(printed, token, deadline) {
  const url = `${printed.baseUrl}/accounts/${printed.accountId}/queues`;
  for (;;) {
    try {
      const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      await response.arrayBuffer();
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`cfq emulator did not answer ${url} in time`);
    await after(50);
  }
}

/** Closes stdin (the emulator stops in order), then SIGTERM, then SIGKILL. */
async function stopChild(child, exited) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  // Held again while it stops, so that awaiting stop() keeps this process up.
  child.ref();
  child.stdin.end();
  const settled = await Promise.race([exited, after(STOP_GRACE_MS).then(() => null)]);
  if (settled) return;
  child.kill('SIGTERM');
  if (await Promise.race([exited, after(STOP_GRACE_MS).then(() => null)])) return;
  child.kill('SIGKILL');
  await exited;
}

function after(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

module.exports = { startEmulator, binaryPath, platformPackage };
