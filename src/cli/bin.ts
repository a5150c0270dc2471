#!/usr/bin/env node
import { isParseWorker, runParseWorker } from '../io/parseWorker.js';
import { main } from './main.js';

if (isParseWorker()) {
  // The same file serves as the parse worker of the parallel trace loader.
  runParseWorker();
} else {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e) => {
      process.stderr.write(`gpuwise: internal error: ${(e as Error)?.message ?? e}\n`);
      process.exitCode = 70;
    },
  );
}
