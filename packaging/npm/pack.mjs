// The npm packages of one cfq build, for `cargo xtask dist`:
//
//   node packaging/npm/pack.mjs --binary target/release/cfq --version 0.3.0 \
//     --target x86_64-unknown-linux-gnu --out target/dist
//
// writes target/dist/npm/cfq/ (the main package: launcher, startEmulator,
// types) and target/dist/npm/<platform package>/ (the binary), then packs
// both into target/dist/*.tgz. The other platforms' packages are made the
// same way by a release, one runner per target, from the same files.

import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * The npm version of a crate's version. Both are SemVer 2.0, pre-releases
 * alike (`0.4.0-rc.1` stays `0.4.0-rc.1`, which npm orders before 0.4.0
 * and never installs for `^0.3`); build metadata (`+…`), which npm ignores
 * and would publish as the bare version, is dropped.
 */
export function npmVersion(crateVersion) {
  const match = /^(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/.exec(crateVersion);
  if (!match) throw new Error(`not a SemVer version: ${JSON.stringify(crateVersion)}`);
  return `${match[1]}.${match[2]}.${match[3]}${match[4] ?? ''}`;
}

/** The platforms, from platforms.json. */
export function platforms() {
  return JSON.parse(readFileSync(join(here, 'platforms.json'), 'utf8')).platforms;
}

function options(argv) {
  const given = {};
  for (let i = 0; i < argv.length; i += 2) given[argv[i].replace(/^--/, '')] = argv[i + 1];
  for (const name of ['binary', 'version', 'target', 'out']) {
    if (!given[name]) throw new Error(`--${name} is required`);
  }
  return given;
}

function writeJson(path, value) {
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}

function main() {
  const given = options(process.argv.slice(2));
  const version = npmVersion(given.version);
  const all = platforms();
  const platform = all.find((p) => p.target === given.target);
  if (!platform) throw new Error(`no platform package for ${given.target} in platforms.json`);
  const out = resolve(given.out);
  const root = join(out, 'npm');
  rmSync(root, { recursive: true, force: true });

  const main = join(root, 'cfq');
  cpSync(join(here, 'cfq'), main, { recursive: true });
  const manifest = JSON.parse(readFileSync(join(main, 'package.json'), 'utf8'));
  manifest.version = version;
  manifest.optionalDependencies = Object.fromEntries(all.map((p) => [p.package, version]));
  writeJson(join(main, 'package.json'), manifest);

  const carrier = join(root, platform.package);
  mkdirSync(join(carrier, 'bin'), { recursive: true });
  copyFileSync(resolve(given.binary), join(carrier, 'bin', platform.binary));
  chmodSync(join(carrier, 'bin', platform.binary), 0o755);
  writeJson(join(carrier, 'package.json'), {
    name: platform.package,
    version,
    description: `The cfq binary for ${platform.target}, run by the cfq package (npx cfq, startEmulator)`,
    license: manifest.license,
    repository: manifest.repository,
    os: [platform.os],
    cpu: [platform.cpu],
    ...(platform.libc ? { libc: [platform.libc] } : {}),
    files: ['bin/'],
    preferUnplugged: true,
  });
  writeFileSync(
    join(carrier, 'README.md'),
    `# ${platform.package}\n\nThe \`cfq\` binary for ${platform.target}. Install [cfq](https://www.npmjs.com/package/cfq), which picks it.\n`,
  );

  for (const dir of [main, carrier]) {
    const packed = execFileSync('npm', ['pack', '--silent', '--pack-destination', out], {
      cwd: dir,
      encoding: 'utf8',
    }).trim();
    console.log(join(out, packed.split('\n').pop()));
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main();
}
