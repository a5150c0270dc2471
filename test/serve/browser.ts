/**
 * The browser the page tests drive: Debian's chromium through puppeteer-core (which downloads no browser).
 * Locally a missing chromium skips the browser tests with a clear message; under CI (CI=true) it is a failure,
 * since .ci/run installs it.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'puppeteer-core';

export const CHROMIUM = process.env.GPUWISE_CHROMIUM ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or null when they can (CI=true never skips: the test fails instead). */
export function browserMissing(): string | null {
  if (existsSync(CHROMIUM)) return null;
  if (process.env.CI === 'true') return null;
  return `${CHROMIUM} not found: browser tests skipped (apt-get install chromium; CI installs it)`;
}

export async function launchBrowser(): Promise<{ browser: Browser; close(): Promise<void> }> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: CI must install chromium (apt-get install chromium, .ci/run)`);
  const { default: puppeteer } = await import('puppeteer-core');
  const profile = mkdtempSync(join(tmpdir(), 'gpuwise-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: profile,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
  });
  return {
    browser,
    close: async () => {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
