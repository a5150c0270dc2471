#!/usr/bin/env node
/**
 * The behaviour-equivalence suite (issues 27 and 43): every case runs twice, plainly and under `gpuwise doctor`, with
 * the same interpreter, environment, working directory (the same absolute path, recreated), stdin (/dev/null), stdio
 * arrangement and time limit, and the two runs are compared: how the process ended (exit status, or the signal that
 * killed it), the bytes the script's stdout and stderr delivered, the bytes of every file the script left in its
 * working directory, and whether doctor saw the training at all. doctor must leave the program exactly as it found it.
 *
 *   node scripts/equivalence.mjs --python PY --cli dist/gpuwise.mjs --cases DIR [--cases DIR2 ...] \
 *     [--jobs N] [--json OUT] [--only a,b] [--timeout S] [--self-check] [--keep] [--generate SEEDS [--generate-all]]
 *
 * A case is `NAME.py`, or a folder `NAME/` run as its working directory, whose `main.py` (or, for a folder whose
 * command runs no main.py, `case.txt`) holds the declarations below, one a line, in the docstring:
 *
 *   # equivalence: allow stdout-line|stderr-line|file REGEX -- why
 *       lines of stdout or stderr matching REGEX are dropped from both runs before comparing; a file whose path
 *       relative to the working directory matches REGEX may differ in its bytes. docs/validation/equivalence.md lists them.
 *   # equivalence: command WORD...
 *       the command both runs execute (doctor runs it as `gpuwise doctor ... -- WORD...`), in shell-like words ('...'
 *       and "..." quote, a backslash escapes in "..."; nothing is expanded): `{python}` is the interpreter under test
 *       (--python), `{script}` the case's file (main.py in a folder). Default: `{python} {script}`. Examples:
 *       `env PYTHONPATH=pkg {python} train.py`, `bash train.sh`, `make train`, `{python} -I main.py`,
 *       `bash -c "cd sub && PYTHONPATH=. {python} train.py"`, `{python} -m torch.distributed.run ... main.py`.
 *       In every case `python` and `python3` on PATH are the interpreter under test too (a folder of two small
 *       scripts that exec it, first on PATH), so a case's Makefiles and shell scripts call `python3` as a user's do.
 *   # equivalence: stdio [stdout=KIND] [stderr=KIND]
 *       what the script's stdout and stderr are. KIND:
 *         own      (the default) a file of the command's own: the command runs as `sh -c 'exec CMD </dev/null
 *                  >FILE 2>FILE'`, so the script never shares a stream with doctor (the suite's first 94 cases).
 *         file     doctor's own stream (the plain run's parent's) is a file; the script inherits it.
 *         pipe     doctor's stream is a pipe a `cat` drains at once; the script inherits it.
 *         slow     a pipe a slow reader drains: 8 KiB reads, 1 ms apart, after 50 ms (a log shipper, a terminal
 *                  over SSH); a script that writes more than the pipe holds (64 KiB) must wait for it.
 *         tee      a pipe into `tee FILE` whose own stdout is a slow reader (`python train.py | tee log` on a
 *                  terminal over SSH): tee waits for its reader, so the script waits for tee.
 *         closing  a pipe whose reader takes 4096 bytes and closes it (`| head -c 4096`): later writes fail with
 *                  EPIPE; a case writes well over 64 KiB so that it always meets the closed end.
 *         closed   the descriptor is closed (`>&-`).
 *       The plain run gets the very same arrangement: its parent (see REAPER) holds the same descriptors doctor
 *       holds, built by the same `sh -c` pipeline. What is compared is what the reader received (the file, for
 *       `file` and `tee`).
 *   # equivalence: env NAME=VALUE
 *       a variable of the environment both runs start in (doctor's own, which the command inherits): a user whose
 *       shell profile exports PYTHONPATH, say. Not a GPUWISE_ one.
 *   # equivalence: probed N
 *       doctor must record steps in at least N processes of the command (default 1; 2 for a torchrun of two ranks).
 *
 * How doctor's own output is kept apart from the script's: with `own` streams doctor's report and notes stay on
 * doctor's streams (kept for reading, never compared). With an inherited stream doctor's output and the script's
 * share the stream, as they do for a user: doctor writes its text report to stdout only after the command ended,
 * starting with "\ngpuwise doctor: CMD\nOutcome: " (CMD, the command's words, are known here), so stdout is cut at
 * the last such header and what follows is doctor's; on stderr doctor's closing lines (`gpuwise doctor: saved as
 * run ...`, written after the command ended) are the trailing lines starting "gpuwise doctor: ", cut likewise.
 * Anything else doctor or its probe writes into a stream the script shares (a warning while the command runs, a
 * probe's line) is a difference.
 *
 * `--generate SEEDS` (`0-3`, `5,9`) adds the programs scripts/equivalenceGen.mjs generates from those seeds (cases
 * `gen_SEED`, in a temporary folder): each combines behaviours of several families in one deterministic script; the
 * behaviours today's doctor is known to break are left out while their case stands in known-differences.json
 * (`--generate-all` keeps them). The folder is removed when every program ran the same, else kept and each differing
 * program's path printed (copy it into the cases to keep it).
 *
 * Both runs get PYTHONHASHSEED=0 (TorchScript archives and set orders depend on the hash seed), no GPUWISE_*
 * variable of the caller's and no PYTHONUNBUFFERED (Python's default buffering, whatever the caller's shell has). Plain stdout holding a line `skip: REASON` marks the case skipped here (an optional
 * package or a CUDA device missing); both runs must still agree. Aspects that can differ, in this order: exit,
 * stdout, stderr, files, steps (doctor recorded steps in fewer than the declared processes: the probe did not
 * reach the training). `--attach site|path` makes doctor attach its probe by that route (GPUWISE_ATTACH, for doctor
 * alone: through the interpreter's site hook, or the boot folder on PYTHONPATH; run/attach.ts); the report's summary
 * names the processes doctor found using torch without the probe (`unprobed`). `--self-check` runs the plain command twice instead (a case that differs then is not
 * deterministic). Exit status: 0 when every case is equal, 1 when one differs, 2 for bad usage. Node built-ins only:
 * CI and the GPU machine run it as is. Streams are compared as bytes (a line only one run printed is shown as
 * UTF-8).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_KNOWN, knownCases, parseSeeds, writePrograms } from './equivalenceGen.mjs';

export const SCHEMA_VERSION = 1;
/** Seconds one run of a case may take before it is killed (doctor's run includes its analysis of the window). */
const DEFAULT_TIMEOUT_S = 180;
/** Copied case files get this modification time in both runs, so the bytecode caches Python writes are the same. */
const FIXED_MTIME = new Date('2020-01-01T00:00:00Z');
const ALLOW_LINE = /^#\s*equivalence:\s*allow\s+(stdout-line|stderr-line|file)\s+(.+?)\s+--\s+(.+)$/;
const STDIO_KINDS = ['own', 'file', 'pipe', 'slow', 'tee', 'closing', 'closed'];
const PIPED = new Set(['pipe', 'slow', 'tee', 'closing']);
/** Bytes the `closing` reader takes before it closes the pipe. */
const CLOSING_AFTER = 4096;

/** The file of a case that holds its declarations: the script, or a folder's main.py, else its case.txt. */
function declarationFile(c) {
  if (!c.folder) return c.path;
  return existsSync(join(c.path, 'main.py')) ? join(c.path, 'main.py') : join(c.path, 'case.txt');
}

/** The cases in `dir`: `NAME.py`, or a folder `NAME/` (holding `main.py` or `case.txt`) run as the working directory. */
export function listCases(dir) {
  const cases = [];
  for (const entry of readdirSync(dir).sort()) {
    if (entry.startsWith('_') || entry.startsWith('.')) continue;
    const path = join(dir, entry);
    if (entry.endsWith('.py') && statSync(path).isFile()) cases.push({ name: entry.slice(0, -3), path, script: entry, folder: false });
    else if (statSync(path).isDirectory() && (existsSync(join(path, 'main.py')) || existsSync(join(path, 'case.txt'))))
      cases.push({ name: entry, path, script: 'main.py', folder: true });
  }
  return cases;
}

/** Shell-like words: whitespace apart, '...' literal, "..." with \" and \\ escaped; nothing expanded. */
export function splitWords(text) {
  const words = [];
  let word = null;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (/\s/.test(ch)) {
      if (word !== null) words.push(word);
      word = null;
    } else if (ch === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unterminated ' in: ${text}`);
      word = (word ?? '') + text.slice(i + 1, end);
      i = end;
    } else if (ch === '"') {
      let j = i + 1;
      let part = '';
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === '\\' && (text[j + 1] === '"' || text[j + 1] === '\\')) j++;
        part += text[j];
      }
      if (j >= text.length) throw new Error(`unterminated " in: ${text}`);
      word = (word ?? '') + part;
      i = j;
    } else word = (word ?? '') + ch;
  }
  if (word !== null) words.push(word);
  return words;
}

/**
 * A case's declarations (`# equivalence: ...` lines, see the header): the allowed differences, the command's words
 * (null: `{python} {script}`), the stdio kinds and the processes doctor must find training in. A malformed line is
 * an error.
 */
export function declarationsOf(text, name) {
  const out = { allow: [], command: null, stdio: { stdout: 'own', stderr: 'own' }, probed: 1, env: {} };
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!/^#\s*equivalence:/.test(line)) continue;
    const body = line.replace(/^#\s*equivalence:\s*/, '');
    const bad = (want) => new Error(`${name}: malformed '${line}' (want: # equivalence: ${want})`);
    if (/^allow\b/.test(body)) {
      const m = ALLOW_LINE.exec(line);
      if (!m) throw bad('allow stdout-line|stderr-line|file REGEX -- why');
      out.allow.push({ kind: m[1], pattern: new RegExp(m[2]), source: m[2], reason: m[3] });
    } else if (/^command\b/.test(body)) {
      if (out.command) throw new Error(`${name}: two command lines`);
      let words;
      try {
        words = splitWords(body.slice('command'.length));
      } catch (e) {
        throw bad(`command WORD... (${e.message})`);
      }
      if (words.length === 0) throw bad('command WORD...');
      out.command = words;
    } else if (/^stdio\b/.test(body)) {
      const parts = body.split(/\s+/).slice(1);
      if (parts.length === 0) throw bad(`stdio [stdout=KIND] [stderr=KIND] (KIND: ${STDIO_KINDS.join('|')})`);
      for (const part of parts) {
        const m = /^(stdout|stderr)=(\w+)$/.exec(part);
        if (!m || !STDIO_KINDS.includes(m[2])) throw bad(`stdio [stdout=KIND] [stderr=KIND] (KIND: ${STDIO_KINDS.join('|')})`);
        out.stdio[m[1]] = m[2];
      }
    } else if (/^env\b/.test(body)) {
      const m = /^env\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(body);
      if (!m || m[1].startsWith('GPUWISE_')) throw bad('env NAME=VALUE (not a GPUWISE_ variable)');
      out.env[m[1]] = m[2];
    } else if (/^probed\b/.test(body)) {
      const m = /^probed\s+(\d+)$/.exec(body);
      if (!m) throw bad('probed N');
      out.probed = Number(m[1]);
    } else throw bad('allow ... | command ... | stdio ... | env NAME=VALUE | probed N');
  }
  return out;
}

/** The allowed differences a case documents (`# equivalence: allow ...`); a malformed declaration is an error. */
export function allowancesOf(text, name) {
  return declarationsOf(text, name).allow;
}

const shQuote = (s) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * The command both runs execute: the case's words with `{python}` and `{script}` filled in; with an `own` stream,
 * inside `sh -c 'exec CMD </dev/null >FILE 2>FILE'` so that the script writes into a file of its own.
 */
function caseCommand(words, python, script, stdio, outPath, errPath) {
  const argv = words.map((w) => w.replaceAll('{python}', python).replaceAll('{script}', script));
  if (stdio.stdout !== 'own' && stdio.stderr !== 'own') return argv;
  const redirects = `${stdio.stdout === 'own' ? ` >${shQuote(outPath)}` : ''}${stdio.stderr === 'own' ? ` 2>${shQuote(errPath)}` : ''}`;
  return ['sh', '-c', `exec "$0" "$@" </dev/null${redirects}`, ...argv];
}

/** The `slow` reader: 8 KiB reads 1 ms apart after 50 ms, into the file it is given. */
const SLOW_READER = `
import os, sys, time
out = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
time.sleep(0.05)
while True:
    b = os.read(0, 8192)
    if not b:
        break
    while b:
        b = b[os.write(out, b):]
    time.sleep(0.001)
`;

/**
 * The `sh -c` script that gives the side's parent (REAPER, which starts the command or doctor) its stdout and stderr
 * as the case declares; "$@" is the parent's argv. `own` streams of the parent go to files kept for reading.
 */
export function stdioScript(stdio, files, python) {
  const slow = (file) => `${shQuote(python)} -S -c ${shQuote(SLOW_READER)} ${shQuote(file)}`;
  const reader = (kind, file) => {
    if (kind === 'pipe') return `cat >${shQuote(file)}`;
    if (kind === 'tee') return `tee ${shQuote(file)} | ${slow('/dev/null')}`;
    if (kind === 'closing') return `head -c ${CLOSING_AFTER} >${shQuote(file)}`;
    return slow(file);
  };
  const redirect = (kind, fd, file, ownFile) => (kind === 'closed' ? `${fd}>&-` : `${fd}>${shQuote(kind === 'own' ? ownFile : file)}`);
  const { stdout: o, stderr: e } = stdio;
  const run = '"$@" </dev/null';
  if (!PIPED.has(o) && !PIPED.has(e))
    return `${run} ${redirect(o, 1, files.stdout, files.ownStdout)} ${redirect(e, 2, files.stderr, files.ownStderr)}`;
  if (PIPED.has(o) && !PIPED.has(e)) return `${run} ${redirect(e, 2, files.stderr, files.ownStderr)} | ${reader(o, files.stdout)}`;
  if (!PIPED.has(o)) return `${run} 2>&1 ${redirect(o, 1, files.stdout, files.ownStdout)} | ${reader(e, files.stderr)}`;
  return `{ ${run} 2>&1 1>&3 3>&- | { ${reader(e, files.stderr)}; } 3>&-; } 3>&1 | ${reader(o, files.stdout)}`;
}

/**
 * Each side's parent: a small Python that starts the plain command, or doctor, as Node's spawn (and so doctor) starts
 * its command, in a new session with every signal at its default and none blocked, waits for it and writes how it
 * ended: an exit status, or the signal that killed it (Node reports a death by a signal it has no name for, such as
 * SIGRTMAX, as exit code 0). So a doctor that exits 128+N where the plain script died of signal N differs (issue 43
 * item 8). A SIGTERM it receives goes on to its child's process group.
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
      ok({
        code: code ?? 128 + (osConstants.signals[signal] ?? 0),
        signal: signal ?? null,
        timedOut,
        wallS: Math.round(wallS * 100) / 100,
      });
    };
    child.once('error', (e) => {
      writeFileSync(stderrPath, `equivalence: cannot start ${argv[0]}: ${e.message}\n`, { flag: 'a' });
      finish(127, null);
    });
    child.once('exit', finish);
  });
}

/** How the side's parent (REAPER) says its child ended; null when it wrote nothing (it was killed: a time-out). */
function readStatus(statusPath) {
  if (!existsSync(statusPath)) return null;
  const [code, signal] = readFileSync(statusPath, 'utf8').split(' ');
  return { code: Number(code), signal: signal === '-' ? null : signal };
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
      } else if (st.isFile())
        out[r] = {
          size: st.size,
          sha256: createHash('sha256')
            .update(readFileSync(join(dir, r)))
            .digest('hex'),
        };
      else out[r] = { other: true };
    }
  };
  walk('');
  return out;
}

const describeFile = (f) =>
  f.dir ? 'folder' : f.link !== undefined ? `link to ${f.link}` : f.other ? 'special file' : `${f.size} B ${f.sha256.slice(0, 12)}`;
const clip = (s, n = 160) => (s.length > n ? `${s.slice(0, n)}...` : s);

function dropLines(text, patterns) {
  if (patterns.length === 0) return { text, dropped: 0 };
  const lines = text.split('\n');
  const kept = lines.filter((l) => !patterns.some((p) => p.test(l)));
  return { text: kept.join('\n'), dropped: lines.length - kept.length };
}

/** A line of a stream held byte for byte (latin1), as UTF-8 for reading. */
const shown = (l) => Buffer.from(l, 'latin1').toString('utf8');

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
    const q = (l) => `«${clip(shown(l))}»`;
    return lines.length > 3 ? `${q(lines[0])} ${q(lines[1])} ... ${q(lines[lines.length - 1])}` : lines.map(q).join(' ');
  };
  if (onlyDoctor.length > 0) parts.push(`doctor only (${onlyDoctor.length}): ${some(onlyDoctor)}`);
  if (onlyPlain.length > 0) parts.push(`plain only (${onlyPlain.length}): ${some(onlyPlain)}`);
  const kept = (lines) => lines.slice(0, KEPT_LINES).map((l) => clip(shown(l), KEPT_LINE_CHARS));
  return { summary: parts.join('; '), lines: { doctorOnly: kept(onlyDoctor), plainOnly: kept(onlyPlain) } };
}

/**
 * The comparison of one case's two runs: the aspects that differ and a line on each. Streams are strings holding
 * one character per byte (latin1). `probed`: the processes doctor must have recorded steps in (0: not checked).
 */
export function compareRuns(plain, doctor, allowances, probed = 0) {
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
      const sizes = a.text.length !== b.text.length ? `(plain ${a.text.length} B, doctor ${b.text.length} B) ` : '';
      details.push(`${stream}: ${sizes}${diff.summary}`);
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
  const found = doctor.probe?.probed ?? 0;
  if (probed > 0 && doctor.probe && found < probed) {
    differs.push('steps');
    details.push(
      `steps: doctor recorded steps in ${found} process(es) of the command, ${probed} expected (${doctor.probe.processes} sent records; the probe did not reach the training)`,
    );
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
      probed: ranks.filter((r) => (r?.steps?.steps ?? 0) > 0).length,
      windows: Array.isArray(report.profile?.traces) ? report.profile.traces.length : 0,
      probeErrors: ranks.flatMap((r) => (r?.probeError ? [String(r.probeError.error ?? r.probeError)] : [])),
      outcome: report.run?.outcomeText ?? null,
      signal: report.run?.signal ?? null,
      // Processes that imported torch without the probe, named with the reason (doctor's environment.unprobed).
      unprobed: Array.isArray(report.environment?.unprobed) ? report.environment.unprobed.map((u) => `pid ${u.pid}: ${u.reason}`) : [],
      // Each of them named in the report's notes too (what a reader of the text report sees), never "nothing trained".
      unprobedNoted:
        Array.isArray(report.environment?.unprobed) &&
        report.environment.unprobed.every((u) => (report.notes ?? []).some((n) => String(n).includes(`pid ${u.pid}`))) &&
        !(report.notes ?? []).some((n) => /the probe sent nothing/.test(String(n))),
    };
  } catch {
    return { report: false, processes: 0, steps: 0, probed: 0, windows: 0, probeErrors: [], outcome: null, signal: null, unprobed: [], unprobedNoted: false };
  }
}

function prepareWork(c, work) {
  mkdirSync(work, { recursive: true });
  if (c.folder) cpSync(c.path, work, { recursive: true });
  else cpSync(c.path, join(work, c.script));
  for (const rel of Object.keys(fileList(work))) utimesSync(join(work, rel), FIXED_MTIME, FIXED_MTIME);
}

/** The text doctor's report starts with on stdout (doctor.ts writes "\n" and then the text report). */
const reportHeader = (command) => `\ngpuwise doctor: ${command.join(' ')}\nOutcome: `;
/** doctor's closing lines on stderr, written after the command ended ("gpuwise doctor: saved as run ..."). */
const CLOSING_LINES = /(?:gpuwise doctor: [^\n]*\n)+$/;

/**
 * A stream doctor shares with the script, cut into the script's part and doctor's own (see the header): the report
 * after the last header on stdout, the trailing "gpuwise doctor: " lines on stderr.
 */
export function splitDoctorOutput(stream, text, command) {
  if (stream === 'stdout') {
    const i = text.lastIndexOf(reportHeader(command));
    return i < 0 ? { script: text, own: '' } : { script: text.slice(0, i), own: text.slice(i) };
  }
  const m = CLOSING_LINES.exec(text);
  return m ? { script: text.slice(0, m.index), own: text.slice(m.index) } : { script: text, own: '' };
}

const readBytes = (path) => (existsSync(path) ? readFileSync(path).toString('latin1') : '');

/**
 * One side of a case: a fresh working directory at `work`, the run under REAPER with the declared stdio, what the
 * script's streams delivered and what it left, then the directory moved aside.
 */
async function runSide(side, c, decl, ctx, base) {
  const work = join(base, 'work');
  prepareWork(c, work);
  const env = {
    ...ctx.env,
    ...decl.env,
    ...compileCaches(join(base, 'caches')),
    PATH: [ctx.pythonBin, ctx.env.PATH].filter(Boolean).join(delimiter),
  };
  const files = {
    stdout: join(base, `${side}.stdout`),
    stderr: join(base, `${side}.stderr`),
    ownStdout: join(base, `${side}.own.stdout`),
    ownStderr: join(base, `${side}.own.stderr`),
  };
  const command = caseCommand(decl.command ?? ['{python}', '{script}'], ctx.python, c.script, decl.stdio, files.stdout, files.stderr);
  const runDir = join(base, 'doctor-run');
  const doctor = side === 'doctor';
  const inner = doctor
    ? [process.execPath, ctx.cli, 'doctor', '--no-serve', '--out', runDir, '--store', join(base, 'store'), '--', ...command]
    : command;
  // The route doctor attaches the probe by (--attach: GPUWISE_ATTACH, which doctor keeps from the command).
  if (doctor && ctx.attach) env.GPUWISE_ATTACH = ctx.attach;
  const statusPath = join(base, `${side}.status`);
  const argv = ['sh', '-c', stdioScript(decl.stdio, files, ctx.python), 'sh', ctx.python, '-S', '-c', REAPER, statusPath, ...inner];
  const shExit = await runOnce(
    argv,
    work,
    env,
    join(base, `${side}.sh.out`),
    join(base, `${side}.sh.err`),
    ctx.timeoutS,
    `${statusPath}.pid`,
  );
  const status = readStatus(statusPath);
  const exit = status && !shExit.timedOut ? { ...shExit, ...status } : shExit;
  const streams = { stdout: readBytes(files.stdout), stderr: readBytes(files.stderr) };
  const own = { stdout: readBytes(files.ownStdout), stderr: readBytes(files.ownStderr) };
  if (doctor)
    for (const stream of ['stdout', 'stderr']) {
      if (decl.stdio[stream] === 'own' || decl.stdio[stream] === 'closed') continue;
      const cut = splitDoctorOutput(stream, streams[stream], command);
      streams[stream] = cut.script;
      own[stream] = cut.own;
    }
  const result = {
    exit,
    stdout: streams.stdout,
    stderr: streams.stderr,
    files: fileList(work),
    probe: doctor ? probeSummary(runDir) : null,
    doctorStderr: doctor ? own.stderr + readBytes(join(base, `${side}.sh.err`)) : '',
  };
  renameSync(work, join(base, `${side}.files`));
  return result;
}

async function runCase(c, ctx) {
  const base = mkdtempSync(join(ctx.tmp, `${c.name}-`));
  const decl = declarationsOf(readFileSync(declarationFile(c), 'utf8'), c.name);
  const started = Date.now();
  const plain = await runSide('plain', c, decl, ctx, base);
  const other = await runSide(ctx.selfCheck ? 'plain2' : 'doctor', c, decl, ctx, base);
  const skip = /^skip: (.*)$/m.exec(shown(plain.stdout));
  const cmp = compareRuns(plain, other, decl.allow, skip ? 0 : decl.probed);
  const tail = (s) => shown(s).split('\n').slice(-8).join('\n');
  const result = {
    name: c.name,
    equal: cmp.equal,
    differs: cmp.differs,
    details: cmp.details,
    lines: cmp.lines,
    skipped: skip ? skip[1] : null,
    allowed: decl.allow.map((a) => ({ kind: a.kind, pattern: a.source, reason: a.reason })),
    command: decl.command,
    stdio: decl.stdio,
    droppedLines: cmp.droppedLines,
    plain: { ...plain.exit, stderrTail: tail(plain.stderr) },
    doctor: { ...other.exit, stderrTail: tail(other.stderr), probe: other.probe, ownStderrTail: tail(other.doctorStderr) },
    files: Object.keys(plain.files).length,
    wallS: Math.round((Date.now() - started) / 100) / 10,
  };
  if (ctx.keep) result.kept = base;
  else rmSync(base, { recursive: true, force: true });
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
    const child = spawn(
      python,
      [
        '-c',
        'import sys, platform\ntry:\n import torch; t = torch.__version__\nexcept Exception:\n t = None\nprint(platform.python_version(), t)',
      ],
      { env, stdio: ['ignore', 'pipe', 'ignore'] },
    );
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

/**
 * The environment both runs get: the caller's, without gpuwise's own variables and without PYTHONUNBUFFERED (how
 * the script's streams buffer decides how a broken stream shows: a BlockingIOError and exit 1 when buffered, lost
 * bytes and exit 0 when not; a case that wants it unbuffered declares `# equivalence: env PYTHONUNBUFFERED=1`),
 * with a fixed hash seed.
 */
export function caseEnv(base = process.env) {
  const env = { ...base, PYTHONHASHSEED: '0' };
  delete env.PYTHONUNBUFFERED;
  for (const k of Object.keys(env)) if (k.startsWith('GPUWISE_')) delete env[k];
  return env;
}

/** `python` as an absolute path: as given when it names a file, else found on PATH (null: not found). */
export function resolvePython(python, path = process.env.PATH ?? '') {
  if (python.includes('/')) return existsSync(python) ? resolve(python) : null;
  for (const dir of path.split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const p = join(dir, python);
    try {
      if (statSync(p).isFile()) return p;
    } catch {
      // not there
    }
  }
  return null;
}

export async function runSuite(opts) {
  const dirs = Array.isArray(opts.cases) ? [...opts.cases] : [opts.cases];
  // Generated programs (scripts/equivalenceGen.mjs): a folder of their own, kept when one of them differs.
  let generated = null;
  if (opts.generate) {
    const dir = mkdtempSync(join(tmpdir(), 'gpuwise-equivalence-generated-'));
    const paths = writePrograms(dir, parseSeeds(opts.generate), knownCases(opts.generateAll ? null : (opts.known ?? DEFAULT_KNOWN)));
    generated = { seeds: opts.generate, all: Boolean(opts.generateAll), dir, paths };
    dirs.push(dir);
  }
  const all = dirs.flatMap((d) => listCases(d));
  const seen = new Set();
  for (const c of all) {
    if (seen.has(c.name)) throw new Error(`two cases named '${c.name}' in ${dirs.join(', ')}`);
    seen.add(c.name);
  }
  const cases = all.filter((c) => !opts.only || opts.only.includes(c.name));
  if (opts.only)
    for (const n of opts.only) if (!cases.some((c) => c.name === n)) throw new Error(`--only: no case named '${n}' in ${dirs.join(', ')}`);
  for (const c of cases) declarationsOf(readFileSync(declarationFile(c), 'utf8'), c.name);
  const env = caseEnv();
  const python = resolvePython(opts.python, env.PATH);
  if (python === null) throw new Error(`--python ${opts.python}: not found`);
  const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-equivalence-'));
  // `python` and `python3` on the cases' PATH: the interpreter under test (shell scripts and Makefiles call them).
  // Scripts that exec it rather than links to it: a link would be the interpreter's path (sys.executable), and one
  // to a virtual environment's python would lose the environment (pyvenv.cfg is looked for beside the link).
  const pythonBin = join(tmp, 'python-bin');
  mkdirSync(pythonBin);
  for (const name of ['python', 'python3']) writeFileSync(join(pythonBin, name), `#!/bin/sh\nexec ${shQuote(python)} "$@"\n`, { mode: 0o755 });
  const started = Date.now();
  const ctx = { python, pythonBin, cli: resolve(opts.cli), env, attach: opts.attach ?? null, timeoutS: opts.timeoutS, selfCheck: opts.selfCheck, keep: opts.keep, tmp };
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
  if (generated) {
    for (const r of results) if (r.name in generated.paths) r.generated = generated.paths[r.name];
    const differing = results.filter((r) => r.generated && !r.equal);
    if (differing.length === 0 && !opts.keep) {
      rmSync(generated.dir, { recursive: true, force: true });
      generated.dir = null;
    }
    generated.differing = differing.map((r) => r.generated);
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
    generated: generated && { seeds: generated.seeds, all: generated.all, kept: generated.dir, differing: generated.differing },
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
  const line = (cells) =>
    cells
      .map((c, i) => (i < 5 ? c.padEnd(widths[i]) : c))
      .join('  ')
      .trimEnd();
  const s = report.summary;
  return [
    line(head),
    ...rows.map(line),
    '',
    `${s.equal}/${s.cases} equal (${s.skipped} skipped here), ${s.differ} differ; python ${report.pythonVersion ?? '?'}, torch ${report.torchVersion ?? 'none'}, ${report.jobs} job(s), ${report.wallS} s`,
    ...(report.generated?.differing ?? []).map(
      (p) => `generated program that differs, kept: ${p} (copy it into test/equivalence/cases to keep it as a case)`,
    ),
    '',
  ].join('\n');
}

const USAGE =
  'usage: node scripts/equivalence.mjs --python PY --cli dist/gpuwise.mjs --cases DIR [--cases DIR2 ...] [--jobs N] [--json OUT] [--only a,b] [--timeout S] [--self-check] [--keep] [--generate SEEDS [--generate-all]] [--attach site|path]';

async function main(argv) {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        python: { type: 'string' },
        cli: { type: 'string' },
        cases: { type: 'string', multiple: true },
        jobs: { type: 'string' },
        json: { type: 'string' },
        only: { type: 'string' },
        timeout: { type: 'string' },
        'self-check': { type: 'boolean' },
        keep: { type: 'boolean' },
        generate: { type: 'string' },
        'generate-all': { type: 'boolean' },
        attach: { type: 'string' },
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
  if (!values.python || (!values.cases && !values.generate) || (!values.cli && !values['self-check']))
    return bad('--python, --cli and --cases are required');
  for (const d of values.cases ?? []) if (!existsSync(d)) return bad(`--cases ${d}: no such folder`);
  if (values.cli && !existsSync(values.cli)) return bad(`--cli ${values.cli}: no such file (npm run build writes dist/gpuwise.mjs)`);
  const jobs = Number(values.jobs ?? 2);
  const timeoutS = Number(values.timeout ?? DEFAULT_TIMEOUT_S);
  if (!Number.isInteger(jobs) || jobs < 1) return bad(`--jobs ${values.jobs}: not an integer >= 1`);
  if (!(timeoutS > 0)) return bad(`--timeout ${values.timeout}: not a positive number of seconds`);
  if (values.attach !== undefined && values.attach !== 'site' && values.attach !== 'path') return bad(`--attach ${values.attach}: site or path`);
  if (values.generate !== undefined) {
    try {
      parseSeeds(values.generate);
    } catch (e) {
      return bad(`--generate: ${e.message}`);
    }
  }
  let report;
  try {
    report = await runSuite({
      python: values.python,
      cli: values.cli ?? '',
      cases: values.cases ?? [],
      jobs,
      timeoutS,
      selfCheck: values['self-check'] ?? false,
      keep: values.keep ?? false,
      generate: values.generate ?? null,
      generateAll: values['generate-all'] ?? false,
      attach: values.attach ?? null,
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
