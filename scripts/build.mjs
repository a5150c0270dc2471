// Bundles the CLI into one file (dist/gpuwise.mjs) that runs with only `node`.
import { readFileSync } from 'node:fs';
import { build } from 'esbuild';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
await build({
  entryPoints: ['src/cli/bin.ts'],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  outfile: 'dist/gpuwise.mjs',
  banner: { js: 'import { createRequire as __gwCreateRequire } from "node:module"; const require = __gwCreateRequire(import.meta.url);' },
  define: {
    __GPUWISE_VERSION__: JSON.stringify(pkg.version),
    // uPlot inlined for `gpuwise serve` (src/serve/assets.ts): the dashboard works offline, no CDN.
    __GPUWISE_UPLOT_JS__: JSON.stringify(readFileSync(new URL('../node_modules/uplot/dist/uPlot.iife.min.js', import.meta.url), 'utf8')),
    __GPUWISE_UPLOT_CSS__: JSON.stringify(readFileSync(new URL('../node_modules/uplot/dist/uPlot.min.css', import.meta.url), 'utf8')),
  },
  external: ['koffi'],
  logLevel: 'warning',
  legalComments: 'none',
});
