/** Options of {@link startEmulator}; every one is optional. */
export interface EmulatorOptions {
  /** A data directory: the account and its messages kept across restarts (`--data-dir`). */
  dataDir?: string;
  /** A TOML file declaring the account: queues, ids, consumers (`--config`). */
  config?: string;
  /** `"cloudflare"`: enforce Cloudflare's rate limits (`--rate-limits`). */
  rateLimits?: 'cloudflare';
  /** A round trip added to every request, such as `"100ms"` or `"100ms,20ms"` (`--latency`). */
  latency?: string;
  /** The address to listen on. Default `127.0.0.1:0`: a free loopback port. */
  listen?: string;
  /** The API token the emulator accepts. Default: a fresh random one. */
  apiToken?: string;
  /** More arguments for `cfq emulator` (see `npx cfq emulator --help`). */
  args?: string[];
  /** The cfq binary to run. Default: `CFQ_BINARY`, else the platform package's. */
  binary?: string;
  /** How long to wait for the emulator to answer. Default 30,000 ms. */
  startTimeoutMs?: number;
}

/** A running emulator, from {@link startEmulator}. */
export interface RunningEmulator {
  /** The API root, `http://127.0.0.1:PORT/client/v4`: the SDK's `baseURL`. */
  baseUrl: string;
  /** The emulator's account id. */
  accountId: string;
  /** The token it accepts: the SDK's `apiToken`. */
  apiToken: string;
  /** The dashboard's link (it logs a browser in), when the dashboard is on. */
  dashboardUrl?: string;
  /**
   * The variables Cloudflare's SDKs and tools read: `CLOUDFLARE_BASE_URL`,
   * `CLOUDFLARE_API_BASE_URL` (wrangler), `CLOUDFLARE_API_TOKEN`, `CLOUDFLARE_ACCOUNT_ID`.
   */
  env: Record<'CLOUDFLARE_BASE_URL' | 'CLOUDFLARE_API_BASE_URL' | 'CLOUDFLARE_API_TOKEN' | 'CLOUDFLARE_ACCOUNT_ID', string>;
  /** The emulator's process id. */
  pid: number;
  /**
   * Stops the emulator: closes its stdin (it stops in order), then SIGTERM, then SIGKILL,
   * 10 s apart. Resolves once it exited; calling it again gives the same promise. A test
   * process that dies without calling it takes the emulator down with it.
   */
  stop(): Promise<void>;
}

/**
 * Starts `cfq emulator` on a free loopback port with a fresh token, and resolves once it
 * answers. Rejects with the emulator's own words when it cannot start.
 *
 * @example
 * import { test } from 'node:test';
 * import Cloudflare from 'cloudflare';
 * import { startEmulator } from 'cfq';
 * const emulator = await startEmulator();
 * const cf = new Cloudflare({ apiToken: emulator.apiToken, baseURL: emulator.baseUrl });
 * test.after(() => emulator.stop());
 */
export function startEmulator(options?: EmulatorOptions): Promise<RunningEmulator>;

/**
 * The absolute path of the cfq binary `npx cfq` and {@link startEmulator} run: `CFQ_BINARY`
 * (resolved against the current directory), else the platform package's.
 */
export function binaryPath(): string;

/**
 * The name of the package carrying the binary for a platform (default: this one), such as
 * `cfq-linux-x64-gnu`: what to install when `npx cfq` says none is.
 */
export function platformPackage(platform?: string, arch?: string, libc?: 'gnu' | 'musl'): string;
