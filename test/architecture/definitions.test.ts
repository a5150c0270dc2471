/**
 * Each concept defined once (ARCHITECTURE.md, "Checked, not only promised"): an exported constant's name is
 * defined in one module only; no module-level constant is copied, name and value, into another module; the tests
 * of a 16-bit float dtype and of Inductor's Triton kernels live in their homes (util/dtype.ts for a dtype's name,
 * trace/kernelClass.ts for a kernel's) and nowhere else. Reads the sources with TypeScript's parser.
 */
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { sources } from './sources.js';

const SRC = resolve(__dirname, '..', '..', 'src');
/** Where a 16-bit float dtype (by a dtype's name, by a kernel's) and Inductor's kernels are recognised. */
const HALF_HOMES = ['util/dtype.ts', 'trace/kernelClass.ts'];
const TRITON_HOME = 'trace/kernelClass.ts';
/** A regular expression or a string that names a 16-bit float type. */
const HALF_WORD = /bf16|bfloat16|float16|\bhalf\b|\bHalf\b|c10::Half|fp16|_f16/i;


interface Constant {
  file: string;
  name: string;
  exported: boolean;
  value: string;
}

const constants: Constant[] = [];
const regexes: { file: string; text: string }[] = [];
/** String literals that are elements of an array literal (a `new Set([...])`, a list): a set of names. */
const listedStrings: { file: string; text: string }[] = [];

for (const path of sources(SRC)) {
  const file = relative(SRC, path);
  const sf = ts.createSourceFile(file, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  for (const st of sf.statements) {
    if (!ts.isVariableStatement(st) || !(st.declarationList.flags & ts.NodeFlags.Const)) continue;
    const exported = st.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword) === true;
    for (const d of st.declarationList.declarations)
      if (ts.isIdentifier(d.name)) constants.push({ file, name: d.name.text, exported, value: d.initializer?.getText(sf) ?? '' });
  }
  const walk = (n: ts.Node) => {
    if (n.kind === ts.SyntaxKind.RegularExpressionLiteral) regexes.push({ file, text: n.getText(sf) });
    if (ts.isArrayLiteralExpression(n))
      for (const e of n.elements) if (ts.isStringLiteral(e)) listedStrings.push({ file, text: e.text });
    ts.forEachChild(n, walk);
  };
  walk(sf);
}

describe('each constant defined once', () => {
  it('reads the sources (the scan sees the homes)', () => {
    expect(constants.length).toBeGreaterThan(300);
    expect(constants.some((c) => c.file === 'trace/kernelClass.ts' && c.name === 'HALF_KERNEL' && c.exported)).toBe(true);
    expect(regexes.length).toBeGreaterThan(100);
  });

  it('an exported constant\'s name is defined in no other module', () => {
    const bad = constants
      .filter((c) => c.exported)
      .flatMap((c) => constants.filter((o) => o.name === c.name && o.file !== c.file).map((o) => `${c.name}: exported by ${c.file}, defined again in ${o.file}`));
    expect(bad).toEqual([]);
  });

  it('no module-level constant is copied into another module (the same name and the same value)', () => {
    const bad: string[] = [];
    for (const [i, c] of constants.entries())
      for (const o of constants.slice(i + 1))
        if (o.name === c.name && o.file !== c.file && o.value === c.value)
          bad.push(`${c.name} = ${c.value.slice(0, 60)}: in ${c.file} and ${o.file}`);
    expect(bad).toEqual([]);
  });
});

describe('a 16-bit float and a compiled model, each recognised in one place', () => {
  it('no regular expression names a 16-bit float type outside util/dtype.ts (a dtype) and trace/kernelClass.ts (a kernel)', () => {
    const bad = regexes.filter((r) => !HALF_HOMES.includes(r.file) && HALF_WORD.test(r.text)).map((r) => `${r.file}: ${r.text}`);
    expect(bad).toEqual([]);
  });

  it('no list or set of dtype names holds a 16-bit float outside util/dtype.ts', () => {
    const bad = listedStrings
      .filter((s) => !HALF_HOMES.includes(s.file) && /^(torch\.|c10::)?(bfloat16|float16|half|BFloat16|Half)$/.test(s.text))
      .map((s) => `${s.file}: '${s.text}'`);
    expect(bad).toEqual([]);
  });

  it('Inductor\'s Triton kernels are recognised by trace/kernelClass.ts alone (isInductorKernel)', () => {
    const bad = regexes.filter((r) => r.file !== TRITON_HOME && /triton/i.test(r.text)).map((r) => `${r.file}: ${r.text}`);
    expect(bad).toEqual([]);
  });
});
