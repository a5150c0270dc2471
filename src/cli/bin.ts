#!/usr/bin/env node
import { main } from './main.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`gpuwise: internal error: ${(e as Error)?.message ?? e}\n`);
    process.exitCode = 70;
  },
);
