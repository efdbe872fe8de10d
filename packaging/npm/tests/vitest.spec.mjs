// startEmulator() under vitest 4 (the last vitest on Node 20): one
// emulator for the file, started in beforeAll and stopped in afterAll.
// Run by `cargo xtask npm-conformance` with `vitest run`.

import Cloudflare from 'cloudflare';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startEmulator } from 'cfq';

let emulator;
let cf;

beforeAll(async () => {
  emulator = await startEmulator();
  cf = new Cloudflare({ apiToken: emulator.apiToken, baseURL: emulator.baseUrl, maxRetries: 0 });
});

afterAll(() => emulator?.stop());

test('a message pushed through the SDK is pulled and acked', async () => {
  const account_id = emulator.accountId;
  const { queue_id } = await cf.queues.create({ account_id, queue_name: 'vitest-orders' });
  await cf.queues.consumers.create(queue_id, { account_id, type: 'http_pull' });
  await cf.queues.messages.push(queue_id, { account_id, body: { order: 7 }, content_type: 'json' });
  const { messages } = await cf.queues.messages.pull(queue_id, { account_id, batch_size: 10 });
  // As Cloudflare does, a pull gives a json body base64-encoded.
  expect(messages.map((m) => m.metadata['CF-Content-Type'])).toEqual(['json']);
  expect(messages.map((m) => JSON.parse(Buffer.from(m.body, 'base64').toString()))).toEqual([{ order: 7 }]);
  const acked = await cf.queues.messages.ack(queue_id, { account_id, acks: [{ lease_id: messages[0].lease_id }] });
  expect(acked.ackCount).toBe(1);
  expect((await cf.queues.getMetrics(queue_id, { account_id })).backlog_count).toBe(0);
});
