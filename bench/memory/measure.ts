/**
 * One measurement in a fresh process: read and fully analyse a snapshot, render
 * the JSON report, and print the wall time and the peak RSS as one JSON line.
 * Bundled and run by bench.mjs.
 */
import { readSnapshotFile } from '../../src/io/readSnapshot.js';
import { analyze } from '../../src/memory/report.js';

const path = process.argv[2];
if (!path) {
  process.stderr.write('usage: measure.mjs SNAPSHOT\n');
  process.exit(2);
}
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const { snapshot, fileBytes, pickleBytes } = await readSnapshotFile(path);
const tRead = performance.now();
const { report } = analyze(snapshot, { path });
const json = JSON.stringify(report);
const t1 = performance.now();
process.stdout.write(
  `${JSON.stringify({
    path,
    fileBytes,
    pickleBytes,
    entries: report.history.entries,
    readMs: Math.round(tRead - t0),
    totalMs: Math.round(t1 - t0),
    // CPU time of the process (user + system, all threads): unlike wall time, not inflated by other load on a shared machine.
    cpuMs: Math.round((process.cpuUsage(cpu0).user + process.cpuUsage(cpu0).system) / 1000),
    maxRssBytes: process.resourceUsage().maxRSS * 1024,
    reportBytes: json.length,
    peakAllocatedBytes: report.totals.peakAllocatedBytes,
  })}\n`,
);
