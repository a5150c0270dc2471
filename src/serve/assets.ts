/**
 * The static assets every page loads by relative URL (shell): uPlot's script and style sheet, and the pages'
 * shared chart code; the same uPlot inlined into the `--html` files (inlineAssets). uPlot is bundled: the build (scripts/buildConfig.mjs) inlines its two files into dist/gpuwise.mjs
 * (__GPUWISE_UPLOT_JS__ / __GPUWISE_UPLOT_CSS__), so the dashboard works offline and needs no CDN; from the
 * sources (tests, tsx) they are read from node_modules.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { CHARTS_JS } from './pages/clientCharts.js';
import type { InlineAssets } from './pages/layout.js';

declare const __GPUWISE_UPLOT_JS__: string | undefined;
declare const __GPUWISE_UPLOT_CSS__: string | undefined;

export interface Asset {
  type: string;
  body: string;
}

let uplot: InlineAssets | null = null;

/** uPlot's script and style sheet, read once: served by `serve`, inlined into the `--html` files. */
export function inlineAssets(): InlineAssets {
  if (uplot === null) uplot = readUplot();
  return uplot;
}

function readUplot(): InlineAssets {
  let js: string;
  let css: string;
  if (typeof __GPUWISE_UPLOT_JS__ === 'string' && typeof __GPUWISE_UPLOT_CSS__ === 'string') {
    js = __GPUWISE_UPLOT_JS__;
    css = __GPUWISE_UPLOT_CSS__;
  } else {
    try {
      const require = createRequire(import.meta.url);
      js = readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8');
      css = readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8');
    } catch (e) {
      // A bundle built without the two defines, and no node_modules beside it: the pages would draw no chart.
      throw new Error(`uPlot is missing from this build (define __GPUWISE_UPLOT_JS__ and __GPUWISE_UPLOT_CSS__ as scripts/buildConfig.mjs does): ${(e as Error).message}`);
    }
  }
  return { uplotJs: js, uplotCss: css };
}

export function loadAssets(): Map<string, Asset> {
  const { uplotJs, uplotCss } = inlineAssets();
  return new Map([
    ['uplot.js', { type: 'text/javascript; charset=utf-8', body: uplotJs }],
    ['uplot.css', { type: 'text/css; charset=utf-8', body: uplotCss }],
    ['charts.js', { type: 'text/javascript; charset=utf-8', body: CHARTS_JS }],
  ]);
}
