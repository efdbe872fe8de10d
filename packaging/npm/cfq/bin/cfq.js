#!/usr/bin/env node
'use strict';
// `npx cfq ...`: runs the platform's cfq binary with the same arguments,
// passes SIGINT, SIGTERM and SIGHUP on to it, and exits as it exits. (A
// terminal's Ctrl-C reaches both: cfq counts two signals within 0.1 s as
// one, so a first Ctrl-C still stops it in order.)

const { spawn } = require('node:child_process');
const { constants } = require('node:os');
const { binaryPath } = require('../lib/binary.js');

// The signals whose default action ends a Node process: the launcher dies
// of these as cfq did. Node starts its inspector on SIGUSR1 and ignores
// SIGPIPE and SIGXFSZ; the rest are ignored or stop a process. For those,
// the launcher exits with 128 + the signal's number, as a shell reports a
// process killed by it.
const FATAL_TO_NODE = new Set([
  'SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGILL', 'SIGTRAP', 'SIGABRT', 'SIGBUS', 'SIGFPE', 'SIGKILL',
  'SIGUSR2', 'SIGSEGV', 'SIGALRM', 'SIGTERM', 'SIGSTKFLT', 'SIGXCPU', 'SIGVTALRM', 'SIGPROF',
  'SIGIO', 'SIGPOLL', 'SIGPWR', 'SIGSYS',
]);
// How long the launcher waits to die of a signal it raised on itself.
const SELF_KILL_WAIT_MS = 1_000;

let binary;
try {
  binary = binaryPath();
} catch (error) {
  process.stderr.write(`cfq: ${error.message}\n`);
  process.exit(1);
}

const child = spawn(binary, process.argv.slice(2), { stdio: 'inherit' });
const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP'];
for (const signal of forwarded) {
  process.on(signal, () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
    }
  });
}
child.on('error', (error) => {
  process.stderr.write(`cfq: cannot run ${binary}: ${error.message}\n`);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  if (signal) {
    const status = 128 + constants.signals[signal];
    if (FATAL_TO_NODE.has(signal)) {
      // Die of the same signal, so that a shell sees what cfq saw.
      for (const s of forwarded) process.removeAllListeners(s);
      process.kill(process.pid, signal);
      // A Node that outlives it (one whose build handles that signal)
      // still reports it as a shell would.
      setTimeout(() => process.exit(status), SELF_KILL_WAIT_MS);
      return;
    }
    process.exit(status);
  }
  process.exit(code === null ? 1 : code);
});
