/**
 * gpuwise's site hook (shell): `gpuwise-probe.pth` and `_gpuwise_site.py` in a Python's site-packages. The wheel installs
 * them; `installSiteHook` copies them where a Python reads them (the tests, `gpuwise doctor --install-site-hook`). With
 * the hook, doctor changes nothing in the command's environment (run/attach.ts); without it, it puts its boot folder on
 * PYTHONPATH. Whether a Python has the hook is read from the filesystem, never by starting that Python (which would run
 * the user's own site customisations).
 */
import { copyFileSync, cpSync, existsSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { PYTHON_NAME } from '../run/attach.js';
import { firstLineOf, listOrEmpty } from './readLimited.js';

export const HOOK_PTH = 'gpuwise-probe.pth';
export const HOOK_MODULE = '_gpuwise_site.py';


/** The site-packages folders a Python at `python` (as named: a venv's bin/python is a link) reads .pth files from. */
export function siteDirsOf(python: string): string[] {
  const dirs: string[] = [];
  const prefixes = new Set([dirname(dirname(python))]);
  try {
    prefixes.add(dirname(dirname(realpathSync(python))));
  } catch {
    // a name that does not resolve: its own prefix only
  }
  for (const prefix of prefixes)
    for (const lib of [join(prefix, 'lib'), join(prefix, 'local', 'lib')])
      for (const v of listOrEmpty(lib).filter((n) => /^python3(\.\d+)?$/.test(n)))
        for (const site of ['site-packages', 'dist-packages']) dirs.push(join(lib, v, site));
  // The user's site (not read inside a venv without system site packages: a false positive here only means a miss
  // the report names).
  const userLib = join(homedir(), '.local', 'lib');
  for (const v of listOrEmpty(userLib).filter((n) => /^python3\.\d+$/.test(n))) dirs.push(join(userLib, v, 'site-packages'));
  return dirs.filter(isDir);
}

/** Whether the Python at `python` has gpuwise's site hook. */
export function hasSiteHook(python: string): boolean {
  return siteDirsOf(python).some((d) => existsSync(join(d, HOOK_PTH)) && existsSync(join(d, HOOK_MODULE)));
}

/**
 * The Python the command most likely runs: its first word when that is a Python or a script whose `#!` names one
 * (looked up in `path`), else `python3` on `path` (a shell script, make, env: what they would run). null: none found.
 */
export function likelyPython(cmd: readonly string[], path: string | undefined): string | null {
  const first = cmd[0];
  if (first === undefined) return null;
  const exe = first.includes('/') ? first : lookUp(first, path);
  if (exe !== null && PYTHON_NAME.test(exe.slice(exe.lastIndexOf('/') + 1))) return exe;
  const shebang = exe === null ? null : shebangPython(exe);
  if (shebang !== null) return shebang.includes('/') ? shebang : lookUp(shebang, path);
  return lookUp('python3', path) ?? lookUp('python', path);
}

/**
 * Installs what the wheel installs into `siteDir`, from the probe root (the folder holding gpuwise/ and the two hook
 * files): the package and the site hook.
 */
export function installSiteHook(probeRoot: string, siteDir: string): void {
  cpSync(join(probeRoot, 'gpuwise'), join(siteDir, 'gpuwise'), { recursive: true, filter: (src) => !src.includes('__pycache__') });
  for (const f of [HOOK_PTH, HOOK_MODULE]) copyFileSync(join(probeRoot, f), join(siteDir, f));
}

/** `name` looked up in `path` as execvp does (the first regular file). */
export function lookUp(name: string, path: string | undefined): string | null {
  for (const dir of (path ?? '/usr/bin:/bin').split(delimiter)) {
    const cand = join(dir || '.', name);
    try {
      if (statSync(cand).isFile()) return cand;
    } catch {
      // next
    }
  }
  return null;
}

/** The interpreter on a script's `#!` line when it is a Python (`#!/usr/bin/env python3` gives `python3`). */
function shebangPython(file: string): string | null {
  const line = firstLineOf(file);
  const m = line === null ? null : /^#!\s*(\S+)(.*)$/.exec(line);
  if (!m) return null;
  const interp = (m[1] as string).endsWith('/env') ? ((m[2] as string).trim().split(/\s+/).find((w) => !w.startsWith('-')) ?? '') : (m[1] as string);
  return PYTHON_NAME.test(interp.slice(interp.lastIndexOf('/') + 1)) ? interp : null;
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
