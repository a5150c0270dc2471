#!/usr/bin/env node
// Real-GPU check of gpuwise's telemetry: NVML (through koffi) against nvidia-smi on the same machine,
// under a steady load started on every GPU. Needs only node, dist/gpuwise.mjs, node_modules/koffi
// (+ node_modules/@koromix/koffi-linux-x64), node_modules/node-sqlite3-wasm (for the record check),
// nvidia-smi, and python3 with torch for the load (without it the process checks are skipped).
//
//   node bench/telemetry/gpu-check.mjs OUTDIR [--no-load]
//
// Writes OUTDIR/gpu-check.json (every check, with the raw outputs) and ends with "N passed, M failed".
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GPUWISE, gpuCount, gpuwise, hasNvidiaSmi, MIB, run, startExporterProcess, startLoad, stopLoad } from './common.mjs';

const outDir = process.argv[2];
if (!outDir || outDir.startsWith('--')) {
  console.error('usage: node bench/telemetry/gpu-check.mjs OUTDIR [--no-load]');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const wantLoad = !process.argv.includes('--no-load');

const checks = [];
const raw = {};
function check(name, ok, detail = '') {
  checks.push({ name, ok: Boolean(ok), detail });
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
}

// nvidia-smi prints whole MiB and rounds some fields down, others up (reserved, free); gpuwise keeps the bytes.
const sameMiB = (mib, bytes) => bytes !== null && (mib === Math.floor(bytes / MIB) || mib === Math.round(bytes / MIB) || mib === Math.ceil(bytes / MIB));

async function smiCsv(query, fields) {
  const r = await run('nvidia-smi', [`--${query}=${fields.join(',')}`, '--format=csv,noheader,nounits']);
  if (r.code !== 0) throw new Error(`nvidia-smi ${query} failed: ${r.stderr}`);
  return r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => Object.fromEntries(l.split(',').map((c, i) => [fields[i], c.trim()])));
}

async function gwSnapshot(env = {}) {
  const r = await gpuwise(['smi', '--json'], env);
  if (r.code !== 0) throw new Error(`gpuwise smi --json failed (${r.code}): ${r.stderr.trim()}`);
  return JSON.parse(r.stdout);
}

async function main() {
  if (!(await hasNvidiaSmi())) {
    check('nvidia-smi works on this machine', false, 'nvidia-smi -L failed');
    return;
  }
  const n = await gpuCount();
  check('nvidia-smi lists GPUs', n > 0, `${n} GPUs`);
  let load = { procs: [], reason: 'not asked for (--no-load)' };
  if (wantLoad) {
    try {
      load = await startLoad(n, 90);
    } catch (e) {
      load = { procs: [], reason: e.message };
    }
  }
  raw.load = { pids: load.procs.map((p) => ({ gpu: p.gpu, pid: p.pid })), reason: load.reason };
  if (load.procs.length > 0) await new Promise((r) => setTimeout(r, 3000)); // utilisation settles
  try {
    const fields = [
      'index',
      'uuid',
      'pci.bus_id',
      'memory.total',
      'memory.reserved',
      'memory.used',
      'memory.free',
      'utilization.gpu',
      'power.draw',
      'temperature.gpu',
    ];
    // Three rounds of gpuwise -> nvidia-smi -> gpuwise; nvidia-smi must agree with one of the two readings around it.
    for (let round = 0; round < 3; round++) {
      const a = await gwSnapshot();
      const smi = await smiCsv('query-gpu', fields);
      const apps = await smiCsv('query-compute-apps', ['pid', 'used_gpu_memory', 'gpu_uuid']);
      const b = await gwSnapshot();
      raw[`round${round}`] = { gpuwiseBefore: a, nvidiaSmi: smi, apps, gpuwiseAfter: b };
      const tag = `round ${round + 1}`;
      check(`${tag}: gpuwise read the GPUs through NVML`, a.source === 'nvml' && b.source === 'nvml', `source ${a.source}`);
      check(`${tag}: same GPU count`, a.gpus.length === smi.length, `${a.gpus.length} vs ${smi.length}`);
      for (const row of smi) {
        const i = Number(row.index);
        const ga = a.gpus.find((g) => g.index === i);
        const gb = b.gpus.find((g) => g.index === i);
        if (!ga || !gb) {
          check(`${tag} GPU ${i}: present in gpuwise`, false);
          continue;
        }
        check(`${tag} GPU ${i}: uuid`, ga.uuid === row.uuid, `${ga.uuid} vs ${row.uuid}`);
        check(
          `${tag} GPU ${i}: pci bus id`,
          ga.pciBusId?.toLowerCase() === row['pci.bus_id'].toLowerCase(),
          `${ga.pciBusId} vs ${row['pci.bus_id']}`,
        );
        for (const [f, key] of [
          ['memory.total', 'memoryTotalBytes'],
          ['memory.reserved', 'memoryReservedBytes'],
          ['memory.used', 'memoryUsedBytes'],
          ['memory.free', 'memoryFreeBytes'],
        ]) {
          const mib = Number(row[f]);
          check(
            `${tag} GPU ${i}: ${f} exact`,
            sameMiB(mib, ga[key]) || sameMiB(mib, gb[key]),
            `nvidia-smi ${mib} MiB, gpuwise ${ga[key] / MIB} / ${gb[key] / MIB} MiB`,
          );
        }
        const u = Number(row['utilization.gpu']);
        const lo = Math.min(ga.utilizationGpuPercent, gb.utilizationGpuPercent) - 10;
        const hi = Math.max(ga.utilizationGpuPercent, gb.utilizationGpuPercent) + 10;
        check(
          `${tag} GPU ${i}: utilization.gpu within 10 points`,
          u >= lo && u <= hi,
          `nvidia-smi ${u}%, gpuwise ${ga.utilizationGpuPercent}% / ${gb.utilizationGpuPercent}%`,
        );
        const p = Number(row['power.draw']);
        const pLo = Math.min(ga.powerWatts, gb.powerWatts) * 0.85;
        const pHi = Math.max(ga.powerWatts, gb.powerWatts) * 1.15;
        check(
          `${tag} GPU ${i}: power.draw within 15 %`,
          p >= pLo && p <= pHi,
          `nvidia-smi ${p} W, gpuwise ${ga.powerWatts} / ${gb.powerWatts} W`,
        );
        check(
          `${tag} GPU ${i}: temperature within 3 C`,
          Math.abs(Number(row['temperature.gpu']) - ga.temperatureC) <= 3,
          `${row['temperature.gpu']} vs ${ga.temperatureC}`,
        );
        // Processes: every compute app nvidia-smi lists is in gpuwise with the same memory.
        const mine = apps.filter((x) => x.gpu_uuid === row.uuid);
        for (const app of mine) {
          const pa = ga.processes.find((x) => x.pid === Number(app.pid));
          const pb = gb.processes.find((x) => x.pid === Number(app.pid));
          check(`${tag} GPU ${i}: process ${app.pid} found`, pa || pb);
          const na = !/^\d+$/.test(app.used_gpu_memory); // [N/A] (WDDM, MIG without permission): gpuwise must say null, not 0
          if (pa || pb)
            check(
              `${tag} GPU ${i}: process ${app.pid} memory exact`,
              na
                ? (pa ?? pb).usedMemoryBytes === null
                : sameMiB(Number(app.used_gpu_memory), (pa ?? pb).usedMemoryBytes) ||
                    sameMiB(Number(app.used_gpu_memory), (pb ?? pa).usedMemoryBytes),
              `nvidia-smi ${app.used_gpu_memory} MiB, gpuwise ${(pa ?? pb).usedMemoryBytes / MIB} MiB`,
            );
        }
        // A compute process in both gpuwise readings that nvidia-smi does not list is a mismatch.
        const stray = ga.processes
          .filter(
            (x) =>
              (x.type === 'C' || x.type === 'C+G') &&
              !mine.some((m) => Number(m.pid) === x.pid) &&
              gb.processes.some((y) => y.pid === x.pid),
          )
          .map((x) => x.pid);
        check(`${tag} GPU ${i}: no compute process that nvidia-smi does not list`, stray.length === 0, stray.join(','));
      }
    }
    // The load processes: found on their GPU with the host and job details.
    const snap = await gwSnapshot();
    raw.final = snap;
    for (const lp of load.procs) {
      const g = snap.gpus.find((x) => x.index === lp.gpu);
      const p = g?.processes.find((x) => x.pid === lp.pid);
      check(`load on GPU ${lp.gpu}: pid ${lp.pid} found`, p);
      if (!p) continue;
      check(`load on GPU ${lp.gpu}: command and user`, p.command?.includes('gpu_load.py') && p.user, `${p.user} ${p.command}`);
      check(
        `load on GPU ${lp.gpu}: rank/world size/job from its environment`,
        p.rank === lp.gpu && p.worldSize === n && p.slurmJobId === 'gpuwise-check',
        JSON.stringify([p.rank, p.localRank, p.worldSize, p.slurmJobId]),
      );
      check(
        `load on GPU ${lp.gpu}: per-process SM utilisation read`,
        p.smUtilPercent !== null && p.smUtilPercent > 0,
        `${p.smUtilPercent}%`,
      );
      check(`load on GPU ${lp.gpu}: host CPU and RSS`, p.rssBytes > 0 && p.cpuPercent !== undefined, `rss ${p.rssBytes}`);
    }
    if (load.procs.length === 0) console.log(`note: no load started (${load.reason}); process checks used whatever ran`);
    // The nvidia-smi fallback gives the same static figures.
    const fb = await gwSnapshot({ GPUWISE_SOURCE: 'nvidia-smi' });
    raw.fallback = fb;
    check('fallback: source is nvidia-smi', fb.source === 'nvidia-smi');
    check(
      'fallback: same GPUs and total memory as NVML',
      JSON.stringify(fb.gpus.map((g) => [g.uuid, g.memoryTotalBytes])) ===
        JSON.stringify(snap.gpus.map((g) => [g.uuid, Math.floor(g.memoryTotalBytes / MIB) * MIB])),
    );
    // CUDA_VISIBLE_DEVICES awareness and select.
    const sel = await gpuwise(['select', '-n', '1', '--json']);
    check('select -n 1 --json works', sel.code === 0 && JSON.parse(sel.stdout).chosen.length === 1, sel.stderr.trim());
    const vis = await gpuwise(['smi', '--json'], { CUDA_VISIBLE_DEVICES: String(n - 1) });
    const vj = JSON.parse(vis.stdout);
    check(
      'CUDA_VISIBLE_DEVICES maps the last GPU to CUDA ordinal 0',
      vj.gpus[n - 1].cudaIndex === 0 && vj.gpus.filter((g) => g.cudaIndex !== null).length === 1,
    );
    // monitor --json-stream at 10 Hz.
    const mon = await gpuwise(['monitor', '--json-stream', '--interval', '100ms', '--count', '10']);
    const lines = mon.stdout.trim().split('\n');
    check(
      'monitor --json-stream: 10 samples in about 1 s',
      mon.code === 0 && lines.length === 10 && mon.wallMs < 5000,
      `${lines.length} lines, ${mon.wallMs.toFixed(0)} ms`,
    );
    // exporter: dcgm names with the same FB_USED as NVML.
    const ex = await startExporterProcess(['--interval', '100ms']);
    try {
      const body = await (await fetch(`${ex.url}/metrics`)).text();
      raw.exporterSample = body.slice(0, 20000);
      for (const g of snap.gpus) {
        const m = new RegExp(`^DCGM_FI_DEV_FB_USED\\{gpu="${g.index}",UUID="${g.uuid}"[^}]*\\} (\\d+)$`, 'm').exec(body);
        check(
          `exporter: DCGM_FI_DEV_FB_USED for GPU ${g.index}`,
          m && Math.abs(Number(m[1]) - g.memoryUsedBytes / MIB) <= 64,
          m ? `${m[1]} MiB` : 'missing',
        );
      }
      check('exporter: per-process metrics', /^gpuwise_process_gpu_memory_bytes\{/m.test(body) || load.procs.length === 0);
    } finally {
      ex.child.kill('SIGTERM');
    }
    // record, kill -9, replay.
    const rec = join(outDir, `killed-${Date.now()}.sqlite`);
    const child = spawn(process.execPath, [GPUWISE, 'record', '--interval', '100ms', '--out', rec], { stdio: 'ignore' });
    const exited = new Promise((r) => child.on('exit', r));
    await new Promise((r) => setTimeout(r, 4000));
    child.kill('SIGKILL');
    await exited;
    const rp = await gpuwise(['smi', '--replay', rec, '--json']);
    const rj = rp.code === 0 ? JSON.parse(rp.stdout) : null;
    check('record survives kill -9', rj && rj.recording.samples >= 5, rj ? `${rj.recording.samples} samples` : rp.stderr.trim());
  } finally {
    stopLoad(load.procs);
  }
}

// A hard deadline keeps the whole GPU batch bounded even if a driver call or the load hangs.
const deadline = setTimeout(() => {
  check('gpu-check finished within 200 s', false);
  finish();
}, 200_000);
deadline.unref();

function finish() {
  const failed = checks.filter((c) => !c.ok).length;
  writeFileSync(join(outDir, 'gpu-check.json'), JSON.stringify({ schemaVersion: 1, when: new Date().toISOString(), checks, raw }, null, 1));
  console.log(`\n${checks.length - failed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

try {
  await main();
} catch (e) {
  check('gpu-check ran to the end', false, e.stack ?? String(e));
}
finish();
