// The npm package as a TypeScript developer meets it: startEmulator() from
// an installed `cfq`, and Cloudflare's TypeScript SDK against it, each
// operation's effect read back. Run by `cargo xtask npm-conformance`.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import Cloudflare from 'cloudflare';
import { startEmulator } from 'cfq';

let emulator;
let cf;
let account_id;

before(async () => {
  emulator = await startEmulator();
  cf = new Cloudflare({ apiToken: emulator.apiToken, baseURL: emulator.baseUrl, maxRetries: 0 });
  account_id = emulator.accountId;
});

after(() => emulator?.stop());

/** Whether a process is alive. */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function eventually(what, check, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `never: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test('startEmulator resolves to what the SDKs read', () => {
  assert.match(emulator.baseUrl, /^http:\/\/127\.0\.0\.1:\d+\/client\/v4$/);
  assert.match(emulator.accountId, /^[0-9a-f]{32}$/);
  assert.match(emulator.apiToken, /^cfq-test-[0-9a-f]{32}$/);
  assert.match(emulator.dashboardUrl, /^http:\/\/127\.0\.0\.1:\d+\/_dashboard\/login\?key=/);
  assert.deepEqual(emulator.env, {
    CLOUDFLARE_BASE_URL: emulator.baseUrl,
    CLOUDFLARE_API_BASE_URL: emulator.baseUrl,
    CLOUDFLARE_API_TOKEN: emulator.apiToken,
    CLOUDFLARE_ACCOUNT_ID: emulator.accountId,
  });
  assert.ok(alive(emulator.pid));
});

test('queues: create, get, list, update, edit, delete', async () => {
  const created = await cf.queues.create({ account_id, queue_name: 'ts-queues' });
  assert.equal(created.queue_name, 'ts-queues');
  assert.match(created.queue_id, /^[0-9a-f]{32}$/);
  const id = created.queue_id;
  assert.equal((await cf.queues.get(id, { account_id })).queue_name, 'ts-queues');
  const names = [];
  for await (const queue of cf.queues.list({ account_id })) names.push(queue.queue_name);
  assert.ok(names.includes('ts-queues'), names.join(','));
  await cf.queues.update(id, { account_id, queue_name: 'ts-queues', settings: { delivery_delay: 5 } });
  assert.equal((await cf.queues.get(id, { account_id })).settings.delivery_delay, 5);
  await cf.queues.edit(id, { account_id, settings: { message_retention_period: 3600 } });
  const edited = await cf.queues.get(id, { account_id });
  assert.equal(edited.settings.message_retention_period, 3600);
  assert.equal(edited.settings.delivery_delay, 5, 'edit keeps what it leaves out');
  await cf.queues.delete(id, { account_id });
  await assert.rejects(cf.queues.get(id, { account_id }), (error) => error.status === 404);
});

test('consumers: create, list, get, update, delete', async () => {
  const { queue_id } = await cf.queues.create({ account_id, queue_name: 'ts-consumers' });
  const created = await cf.queues.consumers.create(queue_id, {
    account_id,
    type: 'http_pull',
    settings: { batch_size: 10, max_retries: 3, visibility_timeout_ms: 30_000 },
  });
  assert.equal(created.type, 'http_pull');
  const listed = [];
  for await (const consumer of cf.queues.consumers.list(queue_id, { account_id })) listed.push(consumer);
  assert.deepEqual(listed.map((c) => c.consumer_id), [created.consumer_id]);
  const got = await cf.queues.consumers.get(created.consumer_id, { account_id, queue_id });
  assert.equal(got.settings.batch_size, 10);
  await cf.queues.consumers.update(created.consumer_id, {
    account_id,
    queue_id,
    type: 'http_pull',
    settings: { batch_size: 20, max_retries: 5 },
  });
  const updated = await cf.queues.consumers.get(created.consumer_id, { account_id, queue_id });
  assert.equal(updated.settings.batch_size, 20);
  assert.equal(updated.settings.max_retries, 5);
  await cf.queues.consumers.delete(created.consumer_id, { account_id, queue_id });
  const left = [];
  for await (const consumer of cf.queues.consumers.list(queue_id, { account_id })) left.push(consumer);
  assert.deepEqual(left, []);
});

test('messages: push, bulk push, metrics, peek, pull, ack and retry, purge by ref, purge all', async () => {
  const { queue_id } = await cf.queues.create({ account_id, queue_name: 'ts-messages' });
  await cf.queues.consumers.create(queue_id, { account_id, type: 'http_pull' });
  await cf.queues.messages.push(queue_id, { account_id, body: 'hello', content_type: 'text' });
  await cf.queues.messages.bulkPush(queue_id, {
    account_id,
    messages: [
      { body: { order: 42 }, content_type: 'json' },
      { body: 'third', content_type: 'text' },
      { body: 'fourth', content_type: 'text' },
    ],
  });
  assert.equal((await cf.queues.getMetrics(queue_id, { account_id })).backlog_count, 4);
  const peeked = await cf.queues.messages.peek(queue_id, { account_id, batch_size: 10 });
  assert.equal(peeked.messages.length, 4);
  assert.deepEqual(peeked.messages.map((m) => m.attempts), [0, 0, 0, 0], 'a peek leases nothing');

  const pulled = await cf.queues.messages.pull(queue_id, { account_id, batch_size: 2, visibility_timeout_ms: 60_000 });
  assert.equal(pulled.messages.length, 2);
  assert.equal(pulled.messages[0].body, 'hello');
  assert.equal(pulled.messages[0].attempts, 1);
  const [first, second] = pulled.messages;
  const acked = await cf.queues.messages.ack(queue_id, {
    account_id,
    acks: [{ lease_id: first.lease_id }],
    retries: [{ lease_id: second.lease_id, delay_seconds: 0 }],
  });
  assert.equal(acked.ackCount, 1);
  assert.equal(acked.retryCount, 1);
  assert.equal((await cf.queues.getMetrics(queue_id, { account_id })).backlog_count, 3, 'one acked, one back');

  const visible = await cf.queues.messages.peek(queue_id, { account_id, batch_size: 10 });
  const third = visible.messages.find((m) => m.body === 'third');
  assert.ok(third, JSON.stringify(visible.messages));
  await cf.queues.messages.purge(queue_id, { account_id, refs: [{ ref: third.ref }] });
  assert.equal((await cf.queues.getMetrics(queue_id, { account_id })).backlog_count, 2, 'purged by ref');

  await cf.queues.purge.start(queue_id, { account_id, delete_messages_permanently: true });
  await eventually('the purge completes', async () => {
    const status = await cf.queues.purge.status(queue_id, { account_id });
    return String(status.completed) === 'true';
  });
  assert.equal((await cf.queues.getMetrics(queue_id, { account_id })).backlog_count, 0);
});

test('a data directory keeps the account across a restart', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cfq-npm-'));
  try {
    const first = await startEmulator({ dataDir });
    const one = new Cloudflare({ apiToken: first.apiToken, baseURL: first.baseUrl, maxRetries: 0 });
    const { queue_id } = await one.queues.create({ account_id: first.accountId, queue_name: 'kept' });
    await one.queues.messages.push(queue_id, { account_id: first.accountId, body: 'still here', content_type: 'text' });
    await first.stop();
    const second = await startEmulator({ dataDir });
    try {
      const two = new Cloudflare({ apiToken: second.apiToken, baseURL: second.baseUrl, maxRetries: 0 });
      const metrics = await two.queues.getMetrics(queue_id, { account_id: second.accountId });
      assert.equal(metrics.backlog_count, 1);
    } finally {
      await second.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('stop() ends the emulator, and a second call waits for the same end', async () => {
  const own = await startEmulator({ rateLimits: 'cloudflare', latency: '1ms' });
  assert.ok(alive(own.pid));
  const stopping = own.stop();
  assert.equal(own.stop(), stopping);
  await stopping;
  assert.ok(!alive(own.pid));
});

test('a test process that dies takes its emulator with it', async () => {
  // A child Node process starts an emulator, says its pid, and is killed
  // with SIGKILL: no handler, no stop(). Its emulator's stdin closes.
  const script = `
    const { startEmulator } = require('cfq');
    startEmulator().then((e) => { console.log(e.pid); setInterval(() => {}, 1000); });
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = await new Promise((resolve) => child.stdout.once('data', (data) => resolve(Number(String(data).trim()))));
  assert.ok(alive(pid));
  child.kill('SIGKILL');
  await eventually('the emulator stops', () => !alive(pid));
});

// No test of a test process whose child holds the emulator's stdin open,
// as a Python test's multiprocessing fork does: a Node process cannot
// hand it on (libuv opens every descriptor close-on-exec, and startEmulator
// gives the pipe to no one). The Python package tests that case, which
// `--stop-with-parent` covers.

test('startEmulator rejects with the emulator\'s own words', async () => {
  await assert.rejects(startEmulator({ config: '/no/such/account.toml' }), (error) => {
    assert.match(error.message, /exited before it was ready \(exit code 1\)/);
    assert.match(error.message, /cannot read the emulator configuration \/no\/such\/account\.toml/);
    return true;
  });
});
