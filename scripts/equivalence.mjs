#!/usr/bin/env node
/**
 * The behaviour-equivalence suite (issue 27): every case script runs twice, plainly and under `gpuwise doctor`,
 * with the same interpreter, environment, working directory (the same absolute path, recreated), stdin (/dev/null)
 * and time limit, and the two runs are compared: exit status (and signal), stdout bytes, stderr bytes, and the bytes
 * of every file the script left in its working directory. doctor must leave the program exactly as it found it.
 *
 *   node scripts/equivalence.mjs --python PY --cli dist/gpuwise.mjs --cases test/equivalence/cases \
 *     [--jobs N] [--json OUT] [--only a,b] [--timeout S] [--self-check] [--keep]
 *
 * How doctor's own output is kept apart from the script's: the command doctor runs is
 * `sh -c 'exec PY SCRIPT </dev/null >FILE 2>FILE'`, and the plain run is the very same command (started as doctor
 * starts it: see REAPER); the script's streams land in files of their own, doctor's report and notes on doctor's
 * streams (kept for reading, never compared). The probe writes into the script's stderr, so any line of the
 * probe's there is a difference.
 *
 * A case may document an allowed difference in its docstring, one per line, as
 *   # equivalence: allow stdout-line|stderr-line|file REGEX -- why
 * (lines of stdout or stderr matching REGEX are dropped from both runs before comparing; a file whose path relative
 * to the working directory matches REGEX may differ in its bytes). docs/doctor.md lists them.
 *
 * Both runs get PYTHONHASHSEED=0 (TorchScript archives and set orders depend on the hash seed) and no GPUWISE_*
 * variable of the caller's. Plain stdout holding a line `skip: REASON` marks the case skipped here (an optional
 * package or a CUDA device missing); both runs must still agree. `--self-check` runs the plain command twice instead
 * (a case that differs then is not deterministic). Exit status: 0 when every case is equal, 1 when one differs,
 * 2 for bad usage. Node built-ins only: CI and the GPU machine run it as is.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, readlinkSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

export const SCHEMA_VERSION = 1;
/** Seconds one run of a case may take before it is killed (doctor's run includes its analysis of the window). */
const DEFAULT_TIMEOUT_S = 180;
/** Copied case files get this modification time in both runs, so the bytecode caches Python writes are the same. */
const FIXED_MTIME = new Date('2020-01-01T00:00:00Z');
const ALLOW_LINE = /^#\s*equivalence:\s*allow\s+(stdout-line|stderr-line|file)\s+(.+?)\s+--\s+(.+)$/;

/** The cases in `dir`: `NAME.py`, or a folder `NAME/` whose `main.py` runs beside the files it holds. */
export function listCases(dir) {
  const cases = [];
  for (const entry of readdirSync(dir).sort()) {
    if (entry.startsWith('_') || entry.startsWith('.')) continue;
    const path = join(dir, entry);
    if (entry.endsWith('.py') && statSync(path).isFile()) cases.push({ name: entry.slice(0, -3), path, script: entry, folder: false });
    else if (statSync(path).isDirectory() && existsSync(join(path, 'main.py'))) cases.push({ name: entry, path, script: 'main.py', folder: true });
  }
  return cases;
}

/** The allowed differences a case documents (`# equivalence: allow ...`); a malformed one is an error. */
export function allowancesOf(text, name) {
  const out = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!/^#\s*equivalence:/.test(line)) continue;
    const m = ALLOW_LINE.exec(line);
    if (!m) throw new Error(`${name}: malformed '${line}' (want: # equivalence: allow stdout-line|stderr-line|file REGEX -- why)`);
    out.push({ kind: m[1], pattern: new RegExp(m[2]), source: m[2], reason: m[3] });
  }
  return out;
}

const shQuote = (s) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The command both runs execute: the script with stdin from /dev/null and its streams into two files. */
function caseCommand(python, script, outPath, errPath) {
  return ['sh', '-c', `exec "$0" "$@" </dev/null >${shQuote(outPath)} 2>${shQuote(errPath)}`, python, script];
}

/**
 * The plain run's parent: a small Python that starts the command as Node's spawn (and so doctor) does, in a new
 * session with every signal at its default and none blocked, waits for it and writes how it ended (Node reports a
 * death by a signal it has no name for, such as SIGRTMAX, as exit code 0). A SIGTERM it receives goes on to the
 * command's process group.
 */
const REAPER = `
import os, signal, sys
status_path, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    try:
        os.setsid()
        for s in signal.valid_signals():
            try:
                signal.signal(s, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
with open(status_path + ".pid", "w") as f:
    f.write(str(pid))
def forward(signum, frame):
    try:
        os.killpg(pid, signum)
    except OSError:
        pass
signal.signal(signal.SIGTERM, forward)
_, status = os.waitpid(pid, 0)
if os.WIFSIGNALED(status):
    n = os.WTERMSIG(status)
    try:
        name = signal.Signals(n).name
    except ValueError:
        name = "SIG%d" % n
    line = "%d %s" % (128 + n, name)
else:
    line = "%d -" % os.waitstatus_to_exitcode(status)
with open(status_path, "w") as f:
    f.write(line)
`;

const killGroup = (pgid, sig) => {
  try {
    process.kill(-pgid, sig);
  } catch {
    // gone already
  }
};

/**
 * Runs argv in its own process group with its output in two files; the group is killed after `timeoutS` (SIGTERM
 * first, so doctor or the reaper can pass it on, SIGKILL 5 s later). `innerGroup` names a file holding the pid of
 * another process group to end with it (the reaper's command).
 */
function runOnce(argv, cwd, env, stdoutPath, stderrPath, timeoutS, innerGroup = null) {
  return new Promise((ok) => {
    const fds = [openSync(stdoutPath, 'w'), openSync(stderrPath, 'w')];
    const started = process.hrtime.bigint();
    const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ['ignore', fds[0], fds[1]], detached: true });
    for (const fd of fds) closeSync(fd);
    let timedOut = false;
    const killAll = (sig) => {
      killGroup(child.pid, sig);
      if (innerGroup && existsSync(innerGroup)) killGroup(Number(readFileSync(innerGroup, 'utf8')), sig);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid, 'SIGTERM');
      setTimeout(() => killAll('SIGKILL'), 5000).unref();
    }, timeoutS * 1000);
    const finish = (code, signal) => {
      clearTimeout(timer);
      killAll('SIGKILL'); // whatever the script left behind in its group
      const wallS = Number(process.hrtime.bigint() - started) / 1e9;
      ok({ code: code ?? 128 + (osConstants.signals[signal] ?? 0), signal: signal ?? null, timedOut, wallS: Math.round(wallS * 100) / 100 });
    };
    child.once('error', (e) => {
      writeFileSync(stderrPath, `equivalence: cannot start ${argv[0]}: ${e.message}\n`, { flag: 'a' });
      finish(127, null);
    });
    child.once('exit', finish);
  });
}

/** The plain run: the command under the reaper, its exit read from the status file the reaper wrote. */
async function runPlain(command, cwd, env, stdoutPath, stderrPath, timeoutS, python, statusPath) {
  const argv = [python, '-S', '-c', REAPER, statusPath, ...command];
  const exit = await runOnce(argv, cwd, env, stdoutPath, stderrPath, timeoutS, `${statusPath}.pid`);
  if (!existsSync(statusPath)) return exit; // the reaper itself was killed (a time-out)
  const [code, signal] = readFileSync(statusPath, 'utf8').split(' ');
  return { ...exit, code: Number(code), signal: signal === '-' ? null : signal };
}

/** Every file and folder under `dir` (relative paths, sorted): size and sha256 of files, targets of links. */
export function fileList(dir) {
  const out = {};
  const walk = (rel) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, r));
      if (st.isSymbolicLink()) out[r] = { link: readlinkSync(join(dir, r)) };
      else if (st.isDirectory()) {
        out[`${r}/`] = { dir: true };
        walk(r);
      } else if (st.isFile()) out[r] = { size: st.size, sha256: createHash('sha256').update(readFileSync(join(dir, r))).digest('hex') };
      else out[r] = { other: true };
    }
  };
  walk('');
  return out;
}

const describeFile = (f) => (f.dir ? 'folder' : f.link !== undefined ? `link to ${f.link}` : f.other ? 'special file' : `${f.size} B ${f.sha256.slice(0, 12)}`);
const clip = (s, n = 160) => (s.length > n ? `${s.slice(0, n)}...` : s);

function dropLines(text, patterns) {
  if (patterns.length === 0) return { text, dropped: 0 };
  const lines = text.split('\n');
  const kept = lines.filter((l) => !patterns.some((p) => p.test(l)));
  return { text: kept.join('\n'), dropped: lines.length - kept.length };
}

/** Lines of each differing stream kept in the JSON, and the characters kept of each. */
const KEPT_LINES = 60;
const KEPT_LINE_CHARS = 300;

/**
 * What differs between two texts: the lines only one side printed (as multisets: order aside), in a few words for
 * the table (a traceback's first two lines and the exception it ends with), and bounded lists for the JSON.
 */
function textDifference(a, b) {
  const la = a.split('\n');
  const lb = b.split('\n');
  const count = (lines) => {
    const m = new Map();
    for (const l of lines) m.set(l, (m.get(l) ?? 0) + 1);
    return m;
  };
  const ca = count(la);
  const cb = count(lb);
  const only = (x, y) => {
    const out = [];
    for (const [l, n] of x) for (let i = y.get(l) ?? 0; i < n; i++) if (l.trim() !== '') out.push(l);
    return out;
  };
  const onlyPlain = only(ca, cb);
  const onlyDoctor = only(cb, ca);
  const parts = [];
  if (onlyPlain.length === 0 && onlyDoctor.length === 0) {
    const i = la.findIndex((l, k) => l !== lb[k]);
    parts.push(`the same lines in another order or blank lines apart (from line ${i + 1})`);
  }
  const some = (lines) => {
    const q = (l) => `«${clip(l)}»`;
    return lines.length > 3 ? `${q(lines[0])} ${q(lines[1])} ... ${q(lines[lines.length - 1])}` : lines.map(q).join(' ');
  };
  if (onlyDoctor.length > 0) parts.push(`doctor only (${onlyDoctor.length}): ${some(onlyDoctor)}`);
  if (onlyPlain.length > 0) parts.push(`plain only (${onlyPlain.length}): ${some(onlyPlain)}`);
  const kept = (lines) => lines.slice(0, KEPT_LINES).map((l) => clip(l, KEPT_LINE_CHARS));
  return { summary: parts.join('; '), lines: { doctorOnly: kept(onlyDoctor), plainOnly: kept(onlyPlain) } };
}

/** The comparison of one case's two runs: the aspects that differ and a line on each. */
export function compareRuns(plain, doctor, allowances) {
  const differs = [];
  const details = [];
  const exitText = (r) => (r.timedOut ? `timed out (${r.code})` : r.signal ? `${r.code} (${r.signal})` : String(r.code));
  if (plain.exit.code !== doctor.exit.code || plain.exit.signal !== doctor.exit.signal || plain.exit.timedOut !== doctor.exit.timedOut) {
    differs.push('exit');
    details.push(`exit: plain ${exitText(plain.exit)}, doctor ${exitText(doctor.exit)}`);
  }
  const dropped = { stdout: 0, stderr: 0 };
  const lines = {};
  for (const stream of ['stdout', 'stderr']) {
    const patterns = allowances.filter((a) => a.kind === `${stream}-line`).map((a) => a.pattern);
    const a = dropLines(plain[stream], patterns);
    const b = dropLines(doctor[stream], patterns);
    dropped[stream] = a.dropped + b.dropped;
    if (a.text !== b.text) {
      const diff = textDifference(a.text, b.text);
      differs.push(stream);
      details.push(`${stream}: ${diff.summary}`);
      lines[stream] = diff.lines;
    }
  }
  const filePatterns = allowances.filter((a) => a.kind === 'file').map((a) => a.pattern);
  const fileNotes = [];
  for (const path of new Set([...Object.keys(plain.files), ...Object.keys(doctor.files)])) {
    const p = plain.files[path];
    const d = doctor.files[path];
    if (p && d && JSON.stringify(p) === JSON.stringify(d)) continue;
    if (p && d && filePatterns.some((re) => re.test(path))) continue;
    if (!d) fileNotes.push(`${path} missing under doctor (plain: ${describeFile(p)})`);
    else if (!p) fileNotes.push(`${path} only under doctor (${describeFile(d)})`);
    else fileNotes.push(`${path} plain ${describeFile(p)}, doctor ${describeFile(d)}`);
  }
  if (fileNotes.length > 0) {
    differs.push('files');
    details.push(`files: ${fileNotes.slice(0, 4).join('; ')}${fileNotes.length > 4 ? `; ${fileNotes.length - 4} more` : ''}`);
  }
  return { equal: differs.length === 0, differs, details, lines, droppedLines: dropped };
}

/** What doctor's report says of the probe: processes that sent records, steps, profiler windows, probe errors. */
function probeSummary(runDir) {
  try {
    const report = JSON.parse(readFileSync(join(runDir, 'report.json'), 'utf8'));
    const ranks = Array.isArray(report.ranks) ? report.ranks : [];
    return {
      report: true,
      processes: ranks.length,
      steps: ranks.reduce((n, r) => n + (r?.steps?.steps ?? 0), 0),
      windows: Array.isArray(report.profile?.traces) ? report.profile.traces.length : 0,
      probeErrors: ranks.flatMap((r) => (r?.probeError ? [String(r.probeError.error ?? r.probeError)] : [])),
      outcome: report.run?.outcomeText ?? null,
      signal: report.run?.signal ?? null,
    };
  } catch {
    return { report: false, processes: 0, steps: 0, windows: 0, probeErrors: [], outcome: null, signal: null };
  }
}

function prepareWork(c, work) {
  mkdirSync(work, { recursive: true });
  if (c.folder) cpSync(c.path, work, { recursive: true });
  else cpSync(c.path, join(work, c.script));
  for (const rel of Object.keys(fileList(work))) utimesSync(join(work, rel), FIXED_MTIME, FIXED_MTIME);
}

/** One side of a case: a fresh working directory at `work`, the run, what it printed and left, then the directory moved aside. */
async function runSide(side, c, ctx, base) {
  const work = join(base, 'work');
  prepareWork(c, work);
  const env = { ...ctx.env, ...compileCaches(join(base, 'caches')) };
  const outPath = join(base, `${side}.stdout`);
  const errPath = join(base, `${side}.stderr`);
  const command = caseCommand(ctx.python, c.script, outPath, errPath);
  let exit;
  let probe = null;
  let doctorStderr = '';
  if (side === 'doctor') {
    const runDir = join(base, 'doctor-run');
    const argv = [process.execPath, ctx.cli, 'doctor', '--no-serve', '--out', runDir, '--store', join(base, 'store'), '--', ...command];
    // Under the reaper as the plain run: doctor dies of its script's signal, which Node would read as exit 0 for SIGRTMAX.
    exit = await runPlain(argv, work, env, join(base, 'doctor-own.stdout'), join(base, 'doctor-own.stderr'), ctx.timeoutS, ctx.python, join(base, 'doctor.status'));
    probe = probeSummary(runDir);
    doctorStderr = readFileSync(join(base, 'doctor-own.stderr'), 'utf8');
  } else {
    exit = await runPlain(command, work, env, join(base, `${side}.reaper.out`), join(base, `${side}.reaper.err`), ctx.timeoutS, ctx.python, join(base, `${side}.status`));
  }
  const result = {
    exit,
    stdout: readFileSync(outPath, 'utf8'),
    stderr: readFileSync(errPath, 'utf8'),
    files: fileList(work),
    probe,
    doctorStderr,
  };
  renameSync(work, join(base, `${side}.files`));
  return result;
}

async function runCase(c, ctx) {
  const base = mkdtempSync(join(ctx.tmp, `${c.name}-`));
  const allowances = allowancesOf(readFileSync(c.folder ? join(c.path, c.script) : c.path, 'utf8'), c.name);
  const started = Date.now();
  const plain = await runSide('plain', c, ctx, base);
  const other = await runSide(ctx.selfCheck ? 'plain2' : 'doctor', c, ctx, base);
  const cmp = compareRuns(plain, other, allowances);
  const skip = /^skip: (.*)$/m.exec(plain.stdout);
  const tail = (s) => s.split('\n').slice(-8).join('\n');
  const result = {
    name: c.name,
    equal: cmp.equal,
    differs: cmp.differs,
    details: cmp.details,
    lines: cmp.lines,
    skipped: skip ? skip[1] : null,
    allowed: allowances.map((a) => ({ kind: a.kind, pattern: a.source, reason: a.reason })),
    droppedLines: cmp.droppedLines,
    plain: { ...plain.exit, stderrTail: tail(plain.stderr) },
    doctor: { ...other.exit, stderrTail: tail(other.stderr), probe: other.probe, ownStderrTail: tail(other.doctorStderr) },
    files: Object.keys(plain.files).length,
    wallS: Math.round((Date.now() - started) / 100) / 10,
  };
  if (!ctx.keep) rmSync(base, { recursive: true, force: true });
  else result.kept = base;
  return result;
}

async function pool(items, jobs, fn) {
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, jobs) }, worker));
  return out;
}

/** The interpreter's Python and torch versions, for the report (null when it has no torch). */
function versionsOf(python, env) {
  return new Promise((ok) => {
    const child = spawn(python, ['-c', 'import sys, platform\ntry:\n import torch; t = torch.__version__\nexcept Exception:\n t = None\nprint(platform.python_version(), t)'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    let text = '';
    child.stdout.on('data', (d) => {
      text += d;
    });
    child.once('error', () => ok({ python: null, torch: null }));
    child.once('close', () => {
      const [py, torch] = text.trim().split(' ');
      ok({ python: py ?? null, torch: torch && torch !== 'None' ? torch : null });
    });
  });
}

/**
 * Empty compile caches for each side, at the same path (a case that prints its environment sees the same variables).
 * Inductor and Triton keep compiled graphs on disk across processes, and a run that finds the other side's graphs
 * skips the compile and its one-time warnings (Inductor's TF32 warning): the second run of a case would differ from
 * the first for a reason that is not doctor's.
 */
function compileCaches(dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return { TORCHINDUCTOR_CACHE_DIR: join(dir, 'inductor'), TRITON_CACHE_DIR: join(dir, 'triton') };
}

/** The environment both runs get: the caller's, without gpuwise's own variables, with a fixed hash seed. */
export function caseEnv(base = process.env) {
  const env = { ...base, PYTHONHASHSEED: '0' };
  for (const k of Object.keys(env)) if (k.startsWith('GPUWISE_')) delete env[k];
  return env;
}

export async function runSuite(opts) {
  const cases = listCases(opts.cases).filter((c) => !opts.only || opts.only.includes(c.name));
  if (opts.only) for (const n of opts.only) if (!cases.some((c) => c.name === n)) throw new Error(`--only: no case named '${n}' in ${opts.cases}`);
  for (const c of cases) allowancesOf(readFileSync(c.folder ? join(c.path, c.script) : c.path, 'utf8'), c.name);
  const env = caseEnv();
  const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-equivalence-'));
  const started = Date.now();
  const ctx = { python: opts.python, cli: resolve(opts.cli), env, timeoutS: opts.timeoutS, selfCheck: opts.selfCheck, keep: opts.keep, tmp };
  let results;
  try {
    results = await pool(cases, opts.jobs, async (c) => {
      const r = await runCase(c, ctx);
      opts.onCase?.(r);
      return r;
    });
  } finally {
    if (!opts.keep) rmSync(tmp, { recursive: true, force: true });
  }
  const versions = await versionsOf(opts.python, env);
  return {
    schemaVersion: SCHEMA_VERSION,
    tool: 'gpuwise-equivalence',
    mode: opts.selfCheck ? 'self-check' : 'doctor',
    python: opts.python,
    pythonVersion: versions.python,
    torchVersion: versions.torch,
    cli: opts.cli,
    jobs: opts.jobs,
    wallS: Math.round((Date.now() - started) / 100) / 10,
    summary: {
      cases: results.length,
      equal: results.filter((r) => r.equal).length,
      differ: results.filter((r) => !r.equal).length,
      skipped: results.filter((r) => r.skipped !== null).length,
    },
    cases: results,
  };
}

/** The table: case, plain exit, doctor exit, same?, probe steps, what differs. */
export function renderTable(report) {
  const rows = report.cases.map((r) => {
    const ex = (e) => (e.timedOut ? 'T/O' : e.signal ? `${e.code}/${e.signal}` : String(e.code));
    const probe = r.doctor.probe ? `${r.doctor.probe.steps}` : '-';
    const what = r.equal ? (r.skipped !== null ? `(skipped: ${r.skipped})` : '') : r.details.join(' | ');
    return [r.name, ex(r.plain), ex(r.doctor), r.equal ? 'yes' : 'NO', probe, what];
  });
  const head = ['case', 'plain', report.mode === 'self-check' ? 'plain 2' : 'doctor', 'same', 'steps', 'what differs'];
  const widths = head.slice(0, 5).map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells) => cells.map((c, i) => (i < 5 ? c.padEnd(widths[i]) : c)).join('  ').trimEnd();
  const s = report.summary;
  return [
    line(head),
    ...rows.map(line),
    '',
    `${s.equal}/${s.cases} equal (${s.skipped} skipped here), ${s.differ} differ; python ${report.pythonVersion ?? '?'}, torch ${report.torchVersion ?? 'none'}, ${report.jobs} job(s), ${report.wallS} s`,
    '',
  ].join('\n');
}

const USAGE = 'usage: node scripts/equivalence.mjs --python PY --cli dist/gpuwise.mjs --cases DIR [--jobs N] [--json OUT] [--only a,b] [--timeout S] [--self-check] [--keep]';

async function main(argv) {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        python: { type: 'string' },
        cli: { type: 'string' },
        cases: { type: 'string' },
        jobs: { type: 'string' },
        json: { type: 'string' },
        only: { type: 'string' },
        timeout: { type: 'string' },
        'self-check': { type: 'boolean' },
        keep: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    process.stderr.write(`equivalence: ${e.message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const bad = (msg) => {
    process.stderr.write(`equivalence: ${msg}\n${USAGE}\n`);
    return 2;
  };
  if (!values.python || !values.cases || (!values.cli && !values['self-check'])) return bad('--python, --cli and --cases are required');
  if (!existsSync(values.cases)) return bad(`--cases ${values.cases}: no such folder`);
  if (values.cli && !existsSync(values.cli)) return bad(`--cli ${values.cli}: no such file (npm run build writes dist/gpuwise.mjs)`);
  const jobs = Number(values.jobs ?? 2);
  const timeoutS = Number(values.timeout ?? DEFAULT_TIMEOUT_S);
  if (!Number.isInteger(jobs) || jobs < 1) return bad(`--jobs ${values.jobs}: not an integer >= 1`);
  if (!(timeoutS > 0)) return bad(`--timeout ${values.timeout}: not a positive number of seconds`);
  let report;
  try {
    report = await runSuite({
      python: values.python,
      cli: values.cli ?? '',
      cases: values.cases,
      jobs,
      timeoutS,
      selfCheck: values['self-check'] ?? false,
      keep: values.keep ?? false,
      only: values.only ? values.only.split(',').filter(Boolean) : null,
      onCase: (r) => process.stderr.write(`${r.equal ? 'same   ' : 'DIFFERS'} ${r.name} (${r.wallS} s)\n`),
    });
  } catch (e) {
    process.stderr.write(`equivalence: ${e.message}\n`);
    return 2;
  }
  if (values.json) writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(renderTable(report));
  return report.summary.differ === 0 ? 0 : 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}

