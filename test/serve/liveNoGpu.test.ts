/**
 * The Live GPUs page on a machine without a GPU (no NVML library, no nvidia-smi): it says so where the GPUs would be,
 * with the sampler's own reason, instead of "waiting for the first sample" for ever. (It does within a second or two;
 * the wait here is long so that a loaded machine cannot fail it: no wall-clock bound in a unit test.)
 */
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserMissing, launchBrowser } from './browser.js';
import { type Served, scratch, serveOn } from './helpers.js';

const missing = browserMissing();
if (missing) console.warn(`gpuwise live page (no GPU) test: ${missing}`);

describe.skipIf(missing !== null)('Live GPUs without a GPU', () => {
  let s: Served;
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  beforeAll(async () => {
    s = await serveOn(scratch('no-gpu'), { env: { GPUWISE_NVML_LIB: '/nonexistent/libnvidia-ml.so.1', GPUWISE_NVIDIA_SMI: '/nonexistent/nvidia-smi' } });
    ({ browser, close: closeBrowser } = await launchBrowser());
  }, 60_000);
  afterAll(async () => {
    await closeBrowser?.();
    await s?.close();
  });

  for (const path of ['live', 'live-panel']) {
    it(`${path}: "no NVIDIA GPU can be read here" and why, in place of the GPUs`, async () => {
      const page = await browser.newPage();
      await page.goto(s.url + path, { waitUntil: 'load' });
      await page.waitForFunction(() => (document.getElementById('no-gpu')?.textContent ?? '').length > 0, { timeout: 30_000 });
      const said = await page.$eval('#no-gpu', (e) => e.textContent ?? '');
      expect(said).toMatch(/^no NVIDIA GPU can be read here: .*libnvidia-ml.*nvidia-smi is not installed/);
      expect(await page.$eval('#procs tbody', (e) => e.textContent ?? '')).toBe('no GPU sampled');
      await page.close();
    });
  }
});
