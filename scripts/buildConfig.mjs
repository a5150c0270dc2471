// The one build definition of the CLI: the esbuild options of the ESM bundle (dist/gpuwise.mjs: `npm run build`,
// scripts/build.mjs) and of the pip wheel's CommonJS bundle (scripts/wheel/build.mjs), which are the ESM one with
// only the format, the output file, the banner and `import.meta.url` changed. What every build must carry is so set
// once: the version, and uPlot inlined (every `--html` page, `serve` and doctor's pages in its run directory need
// it: a bundle without it can write no page). test/packaging/buildConfig.test.ts builds both.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const read = (path) => readFileSync(join(ROOT, path), 'utf8');

/** esbuild's options for the ESM bundle at `outfile` (relative to the repository root). */
export function cliBuildOptions(outfile = 'dist/gpuwise.mjs') {
  const pkg = JSON.parse(read('package.json'));
  return {
    absWorkingDir: ROOT,
    entryPoints: ['src/cli/bin.ts'],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    // koffi is loaded with require() (src/io/koffiLoader.ts): an ES module has none of its own.
    banner: { js: 'import { createRequire as __gwCreateRequire } from "node:module"; const require = __gwCreateRequire(import.meta.url);' },
    define: {
      __GPUWISE_VERSION__: JSON.stringify(pkg.version),
      // uPlot inlined (src/serve/assets.ts): the dashboard and the `--html` pages work offline, no CDN.
      __GPUWISE_UPLOT_JS__: JSON.stringify(read('node_modules/uplot/dist/uPlot.iife.min.js')),
      __GPUWISE_UPLOT_CSS__: JSON.stringify(read('node_modules/uplot/dist/uPlot.min.css')),
    },
    external: ['koffi'],
    logLevel: 'warning',
    legalComments: 'none',
  };
}

/**
 * The wheel's bundle at `outfile`: the same build as CommonJS, which a single executable application's main script
 * must be in Node 20. import.meta.url names the ESM bundle beside the executable, so the code finds koffi, SQLite
 * and its worker file there (the trace loader's workers run that file, which is the same code).
 */
export function seaBuildOptions(outfile) {
  const esm = cliBuildOptions();
  return {
    ...esm,
    format: 'cjs',
    outfile,
    // CommonJS has its own require (koffi's loader); __gwMetaUrl stands for import.meta.url.
    banner: {
      js: 'var __gwMetaUrl = require("node:url").pathToFileURL(require("node:path").join(require("node:path").dirname(process.execPath), "gpuwise.mjs")).href;',
    },
    define: { ...esm.define, 'import.meta.url': '__gwMetaUrl' },
  };
}
