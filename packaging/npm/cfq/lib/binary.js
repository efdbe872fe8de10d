'use strict';
// Which cfq binary to run: CFQ_BINARY when set, else the one the platform
// package of this machine carries (an optional dependency of `cfq`).

const fs = require('node:fs');
const path = require('node:path');

/** Thrown when no binary can be found; its message says what to install. */
class CfqBinaryError extends Error {}

/**
 * The C library of this Linux: `gnu` or `musl`. Detected here rather than
 * left to npm's `libc` field, which older npm clients ignore.
 */
function libc() {
  const report = process.report && typeof process.report.getReport === 'function'
    ? process.report.getReport()
    : undefined;
  const header = typeof report === 'string' ? JSON.parse(report).header : report && report.header;
  // A Node built for glibc and running on it reports glibc's version.
  return header && header.glibcVersionRuntime ? 'gnu' : 'musl';
}

/**
 * The name of the package that carries the binary for a platform: the
 * names `packaging/npm/platforms.json` lists, one rule for all.
 */
function platformPackage(platform = process.platform, arch = process.arch, lib) {
  switch (platform) {
    case 'linux':
      return `cfq-linux-${arch}-${lib || libc()}`;
    case 'win32':
      return `cfq-win32-${arch}-msvc`;
    default:
      return `cfq-${platform}-${arch}`;
  }
}

/**
 * The absolute path of the cfq binary to run. Throws a CfqBinaryError when
 * there is none.
 */
function binaryPath() {
  const override = process.env.CFQ_BINARY;
  if (override) {
    // Resolved against the current directory once, and that path is what
    // runs: a bare `cfq` handed to spawn would be looked up in PATH instead.
    const file = path.resolve(override);
    const named = file === override ? override : `${override} (${file})`;
    let stat;
    try {
      stat = fs.statSync(file);
    } catch {
      throw new CfqBinaryError(`CFQ_BINARY names ${named}, which does not exist`);
    }
    if (!stat.isFile()) throw new CfqBinaryError(`CFQ_BINARY names ${named}, which is not a file`);
    return file;
  }
  const pkg = platformPackage();
  const file = process.platform === 'win32' ? 'cfq.exe' : 'cfq';
  try {
    return require.resolve(`${pkg}/bin/${file}`);
  } catch {
    throw new CfqBinaryError(
      `no cfq binary for ${process.platform}-${process.arch}: its package ${pkg} is not installed ` +
        `(installed without optional dependencies, or no build for this platform). ` +
        `Install it with \`npm install ${pkg}\`, or set CFQ_BINARY to a cfq binary (\`cargo install cfq\`).`,
    );
  }
}

module.exports = { binaryPath, platformPackage, libc, CfqBinaryError };
