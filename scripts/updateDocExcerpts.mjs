#!/usr/bin/env node
/**
 * The sample outputs quoted in README.md, docs/*.md (the user guides), docs/reference/*.md, docs/validation/*.md and
 * examples/realworld/README.md, taken from the tool itself: each sits between
 *
 *   <!-- excerpt: analyze examples/traces/resnet_starved.trace.json.gz | from 1. -->
 *   ```
 *   (what `gpuwise analyze examples/traces/resnet_starved.trace.json.gz` prints)
 *   ```
 *   <!-- /excerpt -->
 *
 * The arguments are gpuwise's, run from the repository root on a shipped input with the built CLI
 * (dist/gpuwise.mjs, `npm run build`). `| from TEXT` keeps the part that starts at the first line beginning with
 * TEXT (leading spaces aside) and ends before the next blank line; without it the whole output is quoted.
 *
 *   node scripts/updateDocExcerpts.mjs          rewrites every excerpt that differs (names the files it changed)
 *   node scripts/updateDocExcerpts.mjs --check  changes nothing; exit 1 naming each excerpt that differs
 *
 * test/docs/excerpts.test.ts runs the check, so an output that changes shows as a failing test until the excerpts
 * are regenerated.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'dist', 'gpuwise.mjs');
const OPEN = /^<!-- excerpt: (.+?)(?: \| from (.+?))? -->$/;
const CLOSE = '<!-- /excerpt -->';

/** The Markdown files that may quote the tool. */
export function docFiles() {
  const md = (dir) => readdirSync(join(ROOT, dir)).filter((f) => f.endsWith('.md')).map((f) => join(dir, f));
  return ['README.md', ...md('docs'), ...md(join('docs', 'reference')), ...md(join('docs', 'validation')), join('examples', 'realworld', 'README.md')];
}

/**
 * The excerpts of one Markdown text: each one's arguments, its `from` text, the line range of its body (between
 * the markers) and the body as quoted (the fence lines removed).
 */
export function findExcerpts(text, file) {
  const lines = text.split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const m = OPEN.exec(lines[i]);
    if (!m) continue;
    const end = lines.indexOf(CLOSE, i + 1);
    if (end < 0) throw new Error(`${file}:${i + 1}: an excerpt without its ${CLOSE}`);
    const body = lines.slice(i + 1, end);
    const fenced = body.length >= 2 && body[0] === '```' && body[body.length - 1] === '```';
    out.push({ file, line: i + 1, args: m[1].split(/\s+/), from: m[2] ?? null, start: i + 1, end, quoted: fenced ? body.slice(1, -1).join('\n') : null });
    i = end;
  }
  return out;
}

/** The part of `output` an excerpt quotes. */
export function excerptOf(output, from, what) {
  const lines = output.replace(/\n+$/, '').split('\n');
  if (from === null) return lines.join('\n');
  const i = lines.findIndex((l) => l.trimStart().startsWith(from));
  if (i < 0) throw new Error(`${what}: no output line starts with "${from}"`);
  const end = lines.findIndex((l, j) => j > i && l.trim() === '');
  return lines.slice(i, end < 0 ? lines.length : end).join('\n');
}

/** What gpuwise prints for these arguments (exit status 0 or 1, an answer; anything else is an error). */
export function outputOf(args) {
  try {
    return execFileSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    if (e.status === 1 && typeof e.stdout === 'string') return e.stdout;
    throw new Error(`gpuwise ${args.join(' ')}: exit ${e.status}: ${String(e.stderr ?? e.message).trim()}`);
  }
}

/** Every excerpt of the docs with what the tool prints now. */
export function currentExcerpts() {
  return docFiles().flatMap((file) =>
    findExcerpts(readFileSync(join(ROOT, file), 'utf8'), file).map((x) => ({ ...x, now: excerptOf(outputOf(x.args), x.from, `${file}:${x.line}`) })),
  );
}

function main() {
  const check = process.argv.includes('--check');
  const stale = currentExcerpts().filter((x) => x.quoted !== x.now);
  if (check) {
    for (const x of stale) process.stderr.write(`${x.file}:${x.line}: the excerpt of \`gpuwise ${x.args.join(' ')}\` differs from what it prints\n`);
    process.exit(stale.length ? 1 : 0);
  }
  for (const file of new Set(stale.map((x) => x.file))) {
    const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
    // From the last excerpt up, so the line numbers of the earlier ones still hold.
    for (const x of stale.filter((s) => s.file === file).sort((a, b) => b.start - a.start)) lines.splice(x.start, x.end - x.start, '```', x.now, '```');
    writeFileSync(join(ROOT, file), lines.join('\n'));
    process.stdout.write(`updated ${file}\n`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main();
