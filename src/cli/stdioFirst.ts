/**
 * The bundle's first module (bin.ts imports it before anything else): the flags of fds 0-2 are read as gpuwise
 * received them, and process.stdout/stderr replaced before any code can touch them (io/ownStdio.ts says why).
 * Not in a worker thread: its stdio is the main thread's business.
 */
import { stdioFlagsAtStart } from '../io/stdioAtStart.js';
import { isMainThread } from 'node:worker_threads';
import { useOwnStdio } from '../io/ownStdio.js';

stdioFlagsAtStart();
if (isMainThread) useOwnStdio();
