// Bundles the CLI into one file (dist/gpuwise.mjs) that runs with only `node`; the options: scripts/buildConfig.mjs.
import { build } from 'esbuild';
import { cliBuildOptions } from './buildConfig.mjs';

await build(cliBuildOptions());
