// The packages' versions follow the crate's, and their names the
// launcher's rule. Run by `cargo xtask npm-conformance` with
// CFQ_CRATE_VERSION and CFQ_PACKAGING (packaging/npm) set.

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const packaging = process.env.CFQ_PACKAGING;
const { npmVersion, platforms } = await import(pathToFileURL(join(packaging, 'pack.mjs')).href);
const { platformPackage } = require('cfq');

test('an npm version is the crate version, pre-releases kept, build metadata dropped', () => {
  assert.equal(npmVersion('0.3.0'), '0.3.0');
  assert.equal(npmVersion('0.4.0-rc.1'), '0.4.0-rc.1');
  assert.equal(npmVersion('1.0.0-alpha.2+build.5'), '1.0.0-alpha.2');
  assert.throws(() => npmVersion('0.3'), /not a SemVer version/);
});

test('the installed packages carry the crate version', () => {
  const version = npmVersion(process.env.CFQ_CRATE_VERSION);
  const main = require('cfq/package.json');
  assert.equal(main.version, version);
  const names = platforms().map((p) => p.package);
  assert.deepEqual(Object.keys(main.optionalDependencies), names);
  assert.ok(Object.values(main.optionalDependencies).every((v) => v === version));
  const here = require(`${platformPackage()}/package.json`);
  assert.equal(here.version, version);
});

test('every platform package is named by the launcher\'s rule', () => {
  for (const p of platforms()) {
    const lib = p.libc === 'glibc' ? 'gnu' : p.libc;
    assert.equal(platformPackage(p.os, p.cpu, lib), p.package);
  }
});
