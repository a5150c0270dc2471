#!/usr/bin/env node
// A synthetic probe: run under doctor as the command (`gpuwise doctor -- node bench/doctor/sendRecords.mjs ...`),
// it finds doctor's collector as the Python probe does (doctor's run registry, through its ancestry: src/run/attach.ts;
// else $GPUWISE_SOCKET) and sends a hello record, STEPS step records (about
// 300 bytes each, GPU step times lagging two steps, as the real probe sends them) and an end record.
//   --steps N            step records (default 1000)
//   --long-line MB       first send MB megabytes without a newline (a probe gone wrong)
//   --exit CODE          exit status (default 0)
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';

/** The collector's socket: the run entry of the doctor above this process (/tmp/gpuwise-UID/run-PID.json), else the variable. */
function socketPath() {
  const stat = (pid) => {
    const text = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  };
  for (let pid = process.ppid, n = 0; pid > 1 && n < 64; pid = Number(stat(pid)[1]), n++) {
    try {
      const entry = JSON.parse(readFileSync(`/tmp/gpuwise-${process.getuid()}/run-${pid}.json`, 'utf8'));
      if (entry.settings?.GPUWISE_SOCKET) return entry.settings.GPUWISE_SOCKET;
    } catch {
      // not doctor
    }
  }
  return process.env.GPUWISE_SOCKET;
}

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const steps = opt('--steps', 1000);
const longLineMiB = opt('--long-line', 0);
const exitCode = opt('--exit', 0);
const pid = process.pid;
const base = { v: 1, pid, rank: null };

const sock = connect(socketPath());
const send = (text) => (sock.write(text) ? Promise.resolve() : new Promise((ok) => sock.once('drain', ok)));

sock.on('connect', async () => {
  const t0 = Date.now() / 1000;
  if (longLineMiB > 0) {
    const mib = Buffer.alloc(1 << 20, 'x');
    for (let i = 0; i < longLineMiB; i++) await send(mib);
    await send('\n');
  }
  await send(
    `${JSON.stringify({ ...base, t: t0, type: 'hello', probeVersion: 'synthetic', python: '3', torch: null, cudnn: null, cuda: { available: false, initialized: false, version: null, devices: [], currentDevice: null }, hostname: 'h', argv: [], localRank: null, worldSize: null, stepHook: 'optimizer-step-post-hook', profileAt: 10, profileSteps: 0, maxSteps: null })}\n`,
  );
  let batch = '';
  for (let s = 1; s <= steps; s++) {
    const stepTimeS = 0.01 + (s % 7) * 0.0001;
    const rec = {
      ...base,
      t: t0 + s * 0.01,
      type: 'step',
      step: s,
      stepTimeS,
      dataWaitS: 0.001,
      batches: 1,
      samples: 32,
      tokens: null,
      seqLen: null,
      stepSource: 'optimizer',
      gpuStepTimes: s > 2 ? [[s - 2, stepTimeS]] : [],
      memory: { device: 0, allocatedBytes: 1e9, reservedBytes: 2e9, peakAllocatedBytes: 1.5e9, peakReservedBytes: 2e9, allocRetries: 0, ooms: 0 },
      profiled: false,
    };
    batch += `${JSON.stringify(rec)}\n`;
    if (batch.length > 1 << 16) {
      await send(batch);
      batch = '';
    }
  }
  await send(`${batch}${JSON.stringify({ ...base, t: t0 + steps * 0.01, type: 'end', reason: 'exit', steps, exception: null, gpuStepTimes: [[steps - 1, 0.01], [steps, 0.01]] })}\n`);
  sock.end(() => process.exit(exitCode));
});
sock.on('error', (e) => {
  process.stderr.write(`sendRecords: ${e.message}\n`);
  process.exit(exitCode);
});
