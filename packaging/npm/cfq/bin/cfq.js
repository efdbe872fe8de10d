#!/usr/bin/env node
'use strict';
// `npx cfq ...`: runs the platform's cfq binary with the same arguments,
// passes SIGINT, SIGTERM and SIGHUP on to it, and exits as it exits. (A
// terminal's Ctrl-C reaches both: cfq counts two signals within 0.1 s as
// one, so a first Ctrl-C still stops it in order.)

const { spawn } = require('node:child_process');
const { binaryPath } = require('../lib/binary.js');

let binary;
try {
  binary = binaryPath();
} catch (error) {
  process.stderr.write(`cfq: ${error.message}\n`);
  process.exit(1);
}

const child = spawn(binary, process.argv.slice(2), { stdio: 'inherit' });
const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
for (const signal of signals) {
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
    // Die of the same signal, so that a shell sees what cfq saw.
    for (const s of signals) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});
