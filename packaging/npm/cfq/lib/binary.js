'use strict';
// Which cfq binary to run: CFQ_BINARY when set, else the one the platform
// package of this machine carries (an optional dependency of `cfq`).

const fs = require('node:fs');

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

/** The path of the cfq binary to run. Throws a CfqBinaryError when there is none. */
function binaryPath() {
  const override = process.env.CFQ_BINARY;
  if (override) {
    if (!fs.existsSync(override)) {
      throw new CfqBinaryError(`CFQ_BINARY names ${override}, which does not exist`);
    }
    return override;
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
