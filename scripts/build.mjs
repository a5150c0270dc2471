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
  define: { __GPUWISE_VERSION__: JSON.stringify(pkg.version) },
  external: ['koffi'],
  logLevel: 'warning',
  legalComments: 'none',
});
