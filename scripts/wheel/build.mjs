// `npm run wheel`: the pip package, a platform wheel in dist/ (linux x86-64 or aarch64, the machine's own) holding
// the probe package (`import gpuwise`) and a `gpuwise` command that needs no Node: a single executable application
// (Node's SEA: this Node binary with the CLI bundled as CommonJS injected by postject) under gpuwise/_cli/, with
// what the bundle loads from disk beside it:
//   gpuwise.mjs                  the ESM bundle, which the trace loader's worker threads run (they start from a file);
//   node_modules/koffi + @koromix/koffi-linux-ARCH   koffi's loader and its prebuilt native module (NVML);
//   node-sqlite3-wasm            its JS and .wasm (the run history, `record`).
// The bundle resolves all three from the folder of the executable (import.meta.url is defined as gpuwise.mjs
// there). scripts/wheel/pack.py writes the wheel itself. Run after `npm run build` (npm run wheel does both).
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { build } from 'esbuild';
import { ROOT, seaBuildOptions } from '../buildConfig.mjs';

const WORK = join(ROOT, 'build', 'wheel');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

const ARCH = { x64: 'x86_64', arm64: 'aarch64' }[process.arch];
if (process.platform !== 'linux' || !ARCH) {
  console.error(`npm run wheel: builds linux x86-64 and aarch64 wheels; this is ${process.platform}-${process.arch}`);
  process.exit(2);
}
// Official Node 20 binaries need glibc 2.28 (and koffi's prebuilt module less).
const TAG = `py3-none-manylinux_2_28_${ARCH}`;
// The fuse every SEA-capable Node binary carries; postject flips it after injecting the blob.
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

const esmBundle = join(ROOT, 'dist', 'gpuwise.mjs');
if (!existsSync(esmBundle)) {
  console.error('npm run wheel: dist/gpuwise.mjs is missing: run `npm run build` first');
  process.exit(2);
}

// The executable is this Node: it must carry the SEA fuse and be self-contained (a distribution's Node that links
// a shared libnode would not run where that library is missing).
const nodeBinary = readFileSync(process.execPath);
if (!nodeBinary.includes(SEA_FUSE) || nodeBinary.includes('libnode.so')) {
  console.error(`npm run wheel: ${process.execPath} cannot make a standalone executable (no SEA fuse, or it links libnode.so): use an official Node 20 binary`);
  process.exit(2);
}

rmSync(WORK, { recursive: true, force: true });
const sea = join(WORK, 'sea');
const stage = join(WORK, 'stage');
const cli = join(stage, 'gpuwise', '_cli');
mkdirSync(sea, { recursive: true });
mkdirSync(cli, { recursive: true });
const t0 = Date.now();
const step = (what) => console.log(`wheel: ${what} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);

// 1. The CLI as one CommonJS file (a SEA's main script must be CommonJS in Node 20): dist/gpuwise.mjs's build as
//    CommonJS, scripts/buildConfig.mjs.
await build(seaBuildOptions(join(sea, 'gpuwise.cjs')));
step('CommonJS bundle');

// 2. The SEA blob (with V8's code cache: the CLI starts without compiling its 700 KB), injected into a copy of
//    this Node binary, stripped first when `strip` exists (99 -> 83 MiB; the dynamic symbols that native modules
//    such as koffi's link against stay).
writeFileSync(
  join(sea, 'sea-config.json'),
  JSON.stringify({ main: 'gpuwise.cjs', output: 'sea-prep.blob', disableExperimentalSEAWarning: true, useCodeCache: true }),
);
execFileSync(process.execPath, ['--experimental-sea-config', 'sea-config.json'], { cwd: sea, stdio: 'inherit' });
const exe = join(cli, 'gpuwise');
copyFileSync(process.execPath, exe);
chmodSync(exe, 0o755);
// Node's official Linux binaries carry the compiler's build notes (annobin) in a section no program reads,
// .gnu.build.attributes. postject's ELF writer (LIEF) re-emits each of those notes under a section name it never
// adds to the section name table and warned once per note ("Can't find string offset for section name
// '.note.100'"): the section goes with the symbols.
const stripped = spawnSync('strip', ['--remove-section=.gnu.build.attributes', exe], { stdio: 'ignore' }).status === 0;
step(stripped ? 'Node binary copied and stripped' : 'Node binary copied (no `strip` here: debug symbols kept)');
const postject = join(ROOT, 'node_modules', 'postject', 'dist', 'cli.js');
const injected = spawnSync(process.execPath, [postject, exe, 'NODE_SEA_BLOB', join(sea, 'sea-prep.blob'), '--sentinel-fuse', SEA_FUSE], {
  encoding: 'utf8',
  stdio: ['ignore', 'ignore', 'pipe'],
});
// The blob's own note gets the same treatment: its section header is written with no name (the blob is found by
// its PT_NOTE segment, not by a section name, so nothing reads it) and LIEF says so in this one line, which is
// all that is left out of postject's stderr.
const BLOB_SECTION_WARNING = "warning: Can't find string offset for section name '.note'";
const postjectErr = (injected.stderr ?? '').split('\n').filter((line) => line.trim() !== '' && line.trim() !== BLOB_SECTION_WARNING);
if (postjectErr.length) console.error(postjectErr.join('\n'));
if (injected.status !== 0) {
  console.error(`npm run wheel: postject failed (exit ${injected.status})`);
  process.exit(1);
}
step('blob injected');

// 3. What the bundle loads from disk, beside the executable; sources, docs and other platforms left out.
copyFileSync(esmBundle, join(cli, 'gpuwise.mjs'));
const modules = join(ROOT, 'node_modules');
const skip = /(^|\/)(doc|vendor|lib|CMakeLists\.txt|CHANGELOG\.md|README\.md|.*\.(cc|hh|inc|S|asm|def|d\.ts|map))$/;
const copyModule = (name, keep = () => true) =>
  cpSync(join(modules, name), join(cli, 'node_modules', name), {
    recursive: true,
    filter: (src) => {
      const rel = relative(join(modules, name), src);
      return rel === '' || (!skip.test(rel) && keep(rel));
    },
  });
copyModule('koffi');
const koffiNative = `@koromix/koffi-linux-${process.arch}`;
if (!existsSync(join(modules, koffiNative))) {
  console.error(`npm run wheel: ${koffiNative} is not installed (npm install puts the one of this platform)`);
  process.exit(2);
}
// glibc only: the wheel is a manylinux one.
copyModule(koffiNative, (rel) => !rel.startsWith('musl_'));
copyModule('node-sqlite3-wasm');
step('koffi and node-sqlite3-wasm copied');

// 4. The Python package (the probe, its boot, the console entry point), without bytecode, and the site hook beside it
// (`gpuwise-probe.pth` and `_gpuwise_site.py` at site-packages' top: doctor then attaches whatever the command does to
// the environment; run/attach.ts).
cpSync(join(ROOT, 'python', 'gpuwise'), join(stage, 'gpuwise'), {
  recursive: true,
  filter: (src) => basename(src) !== '__pycache__' && !src.endsWith('.pyc'),
});
for (const hook of ['gpuwise-probe.pth', '_gpuwise_site.py']) copyFileSync(join(ROOT, 'python', hook), join(stage, hook));
// Node's licence and its dependencies' notices go with the Node inside the executable (where this Node has them).
const nodeLicence = [join(dirname(process.execPath), '..', 'LICENSE'), '/usr/share/doc/nodejs/LICENSE'].find((f) => existsSync(f));
if (nodeLicence) copyFileSync(nodeLicence, join(cli, 'LICENSE.node'));

const python = process.env.PYTHON || 'python3';
const out = execFileSync(
  python,
  [
    join(ROOT, 'scripts', 'wheel', 'pack.py'),
    stage,
    join(ROOT, 'dist'),
    '--name',
    pkg.name,
    '--version',
    pkg.version,
    '--tag',
    TAG,
    '--summary',
    pkg.description,
    '--license',
    pkg.license,
    '--entry',
    'gpuwise=gpuwise._command:main',
  ],
  { encoding: 'utf8' },
).trim();
const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
step(`${relative(ROOT, out)}: ${mib(statSync(out).size)} (executable ${mib(statSync(exe).size)})`);
