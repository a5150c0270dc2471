/** Reading the standalone pages (every `--html` file) in tests: their embedded chart data and <noscript> tables. */
import { expect } from 'vitest';
import { inlineAssets } from '../../src/serve/assets.js';

export const assets = inlineAssets();

/** The chart data a page embeds for its script (`<script type="application/json" id="gw-data">`). */
export const dataOf = <T>(html: string) => JSON.parse(/<script type="application\/json" id="gw-data">([^<]*)<\/script>/.exec(html)?.[1] ?? 'null') as T;

/** The <noscript> fallbacks of a page, in order. */
export const noscripts = (html: string) => [...html.matchAll(/<noscript>([\s\S]*?)<\/noscript>/g)].map((m) => m[1] ?? '');

/** A standalone file: every script and style inline, nothing that a browser would fetch; no script without charts. */
export function expectStandalone(html: string, withCharts: boolean) {
  expect(html.startsWith('<!doctype html>')).toBe(true);
  expect(html).not.toMatch(/<script[^>]* src=|<link rel="stylesheet"|src="https?:|href="https?:|<iframe/i);
  expect(html).not.toContain('<nav><b>gpuwise</b><a href=');
  if (withCharts) {
    expect(html).toContain(assets.uplotJs.slice(0, 200));
    expect(html).toContain('window.gw = ');
  } else expect(html).not.toContain('<script');
}
