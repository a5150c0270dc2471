#!/usr/bin/env node
// First: fds 0-2 as received, and stdout/stderr that never change what gpuwise shares with its command.
import './stdioFirst.js';
import { isInflateWorker, runInflateWorker } from '../io/inflateWorker.js';
import { isParseWorker, runParseWorker } from '../io/parseWorker.js';
import { dieByAskedSignal } from '../io/signalDeath.js';
import { main } from './main.js';

if (isParseWorker()) {
  // The same file serves as the parse worker of the parallel trace loader,
  runParseWorker();
} else if (isInflateWorker()) {
  // and as the worker that decompresses a gzip trace for it.
  runInflateWorker();
} else {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
      // doctor's command died of a signal: gpuwise dies of it too, last thing (io/signalDeath.ts).
      process.once('exit', dieByAskedSignal);
    },
    (e) => {
      process.stderr.write(`gpuwise: internal error: ${(e as Error)?.message ?? e}\n`);
      process.exitCode = 70;
    },
  );
}
