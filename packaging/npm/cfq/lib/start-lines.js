'use strict';
// The lines `cfq emulator` prints on stdout when it starts, read by the
// rules of their version 1: one line at a time, surrounding whitespace
// stripped; `press Ctrl-C to stop` is the ready line and the last of them
// (the emulator accepts connections and stops in order on its signals);
// an `export NAME=VALUE` value is the rest of its line; lines not known
// here are skipped, since a version only ever adds lines; a
// `start-up lines: version N` line with another N is refused; a start with
// no version line (cfq 0.3 and earlier) is version 1. Stderr is for people.

/** The version of the start-up lines this reader knows. */
const VERSION = 1;
const READY = 'press Ctrl-C to stop';
const VERSION_PREFIX = 'start-up lines: version ';
const QUEUE = /^queue (\S+): (\S+)$/;

/** Keeps `value` under `key` unless an earlier line gave one: the first line of a kind counts. */
function keep(record, key, value) {
  if (value !== undefined && !Object.hasOwn(record, key)) record[key] = value;
}

/** Start-up lines this reader cannot take, or their end before the ready line. */
class StartLinesError extends Error {
  constructor(message, { ready = true } = {}) {
    super(message);
    this.name = 'StartLinesError';
    /** False when the lines ended before the ready line. */
    this.ready = ready;
  }
}

/**
 * Reads `cfq emulator`'s stdout up to its ready line. Resolves to
 * `{ baseUrl, accountId, apiToken?, dashboardUrl?, queues: { name: id }, version }`;
 * rejects with a StartLinesError on a version other than 1, on a ready line
 * without the base URL or the account, and when the stream ends before the
 * ready line (its `ready` false). The rest of the stream is read and
 * dropped, so that the emulator never blocks on a full pipe.
 * @param {import('node:stream').Readable} stream
 */
function readStartLines(stream) {
  return new Promise((resolve, reject) => {
    const found = { queues: {}, version: VERSION };
    let settled = false;
    let buffered = '';
    const settle = (outcome, value) => {
      settled = true;
      outcome(value);
    };
    const take = (line) => {
      const value = (prefix) => (line.startsWith(prefix) ? line.slice(prefix.length) : undefined);
      if (line === READY) {
        if (!Object.hasOwn(found, 'baseUrl') || !Object.hasOwn(found, 'accountId')) {
          throw new StartLinesError(
            'cfq emulator said it was ready without export CLOUDFLARE_BASE_URL= and export CLOUDFLARE_ACCOUNT_ID=',
          );
        }
        return true;
      }
      const version = value(VERSION_PREFIX);
      if (version !== undefined && version !== String(VERSION)) {
        throw new StartLinesError(
          `cfq emulator prints start-up lines of version ${version}, and this cfq package reads version ${VERSION}: ` +
            'use a cfq binary of the same release as the package',
        );
      }
      keep(found, 'baseUrl', value('export CLOUDFLARE_BASE_URL='));
      keep(found, 'accountId', value('export CLOUDFLARE_ACCOUNT_ID='));
      keep(found, 'apiToken', value('export CLOUDFLARE_API_TOKEN='));
      keep(found, 'dashboardUrl', value('dashboard: '));
      const queue = QUEUE.exec(line);
      if (queue) keep(found.queues, queue[1], queue[2]);
      return false;
    };
    const takeEach = (lines) => {
      for (const line of lines) {
        if (settled) return;
        try {
          if (take(line.trim())) settle(resolve, found);
        } catch (error) {
          settle(reject, error);
        }
      }
    };
    stream.setEncoding('utf8');
    stream.on('data', (text) => {
      if (settled) return;
      const lines = (buffered + text).split('\n');
      buffered = lines.pop();
      takeEach(lines);
    });
    stream.on('end', () => {
      takeEach([buffered]);
      if (!settled) {
        settle(reject, new StartLinesError(`cfq emulator's output ended before "${READY}"`, { ready: false }));
      }
    });
  });
}

module.exports = { readStartLines, StartLinesError, VERSION };
