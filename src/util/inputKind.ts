/**
 * What kind of gpuwise input a file is, from its first bytes (pure): so that a file given to the wrong command is
 * named for what it is, with the command that reads it, instead of the wrong reader's parse error ("not JSON at
 * character 0" for a snapshot given to analyze). Only recognises what is unambiguous in the first few KB; null
 * for anything else, whose reader then words its own error.
 */

/** The inputs gpuwise reads; `run-directory` is only ever expected (a folder has no first bytes). */
export type InputKind =
  | 'trace'
  | 'snapshot'
  | 'doctor-report'
  | 'model-config'
  | 'probe-records'
  | 'nvidia-smi'
  | 'sqlite'
  | 'run-directory'
  /** Files that are no gpuwise input at all, named by their magic bytes so the line says what was given. */
  | 'image'
  | 'pdf'
  | 'zip'
  | 'executable';

const KIND_NAMES: Record<InputKind, string> = {
  trace: 'a torch.profiler trace',
  snapshot: 'a Python pickle (what torch.cuda.memory._dump_snapshot writes)',
  'doctor-report': 'a gpuwise doctor report',
  'model-config': 'a Hugging Face model config',
  'probe-records': "the probe records of a doctor run",
  'nvidia-smi': 'nvidia-smi output',
  sqlite: 'a SQLite database (a gpuwise record file, or the doctor run history)',
  'run-directory': 'a doctor run directory',
  image: 'an image (PNG, JPEG or GIF)',
  pdf: 'a PDF document',
  zip: 'a zip archive (a torch.save checkpoint is one)',
  executable: 'an executable (ELF)',
};

/** Magic bytes of files that are no gpuwise input, first match wins. */
const FOREIGN: readonly [InputKind, readonly number[]][] = [
  ['image', [0x89, 0x50, 0x4e, 0x47]],
  ['image', [0xff, 0xd8, 0xff]],
  ['image', [0x47, 0x49, 0x46, 0x38]],
  ['pdf', [0x25, 0x50, 0x44, 0x46]],
  ['zip', [0x50, 0x4b, 0x03, 0x04]],
  ['executable', [0x7f, 0x45, 0x4c, 0x46]],
];

/** The name of a kind, as an error line says it ("a torch.profiler trace"). */
export function inputKindName(kind: InputKind): string {
  return KIND_NAMES[kind];
}

/** The kind of the file whose first bytes (inflated, if gzip) are `head`; null when not recognised. */
export function inputKindOf(head: Uint8Array): InputKind | null {
  for (const [kind, magic] of FOREIGN) if (magic.every((b, i) => head[i] === b)) return kind;
  if (head.length >= 2 && head[0] === 0x80 && (head[1] as number) >= 2 && (head[1] as number) <= 5) return 'snapshot';
  let text = '';
  for (let i = 0; i < Math.min(head.length, 4096); i++) text += String.fromCharCode(head[i] as number);
  if (text.startsWith('SQLite format 3\0')) return 'sqlite';
  const t = text.trimStart();
  if (t.startsWith('<?xml') || t.startsWith('<nvidia_smi_log')) return t.includes('<nvidia_smi_log') ? 'nvidia-smi' : null;
  if (/\| NVIDIA-SMI \d/.test(t.slice(0, 400)) || /^[^\n]*\b(memory\.total|utilization\.gpu|used_memory) \[/.test(t)) return 'nvidia-smi';
  if (!t.startsWith('{')) return null;
  if (/^\{\s*"v"\s*:\s*\d+\s*,\s*"type"\s*:/.test(t)) return 'probe-records';
  // Another command's --json report is left to the reader, whose line names that command.
  if (/"tool"\s*:\s*"gpuwise"/.test(t)) return /"command"\s*:\s*"doctor"/.test(t) ? 'doctor-report' : null;
  if (/"(traceEvents|deviceProperties|distributedInfo)"\s*:/.test(t)) return 'trace';
  if (/"(model_type|architectures)"\s*:/.test(t)) return 'model-config';
  return null;
}

/** The gpuwise command line that reads a file of `kind` at `path`; null when none reads it as it is. */
export function readerOf(kind: InputKind, path: string, dir: string): string | null {
  switch (kind) {
    case 'trace':
      return `gpuwise analyze ${path}`;
    case 'snapshot':
      return `gpuwise memory ${path}`;
    case 'doctor-report':
      return `gpuwise runs show ${path}`;
    case 'model-config':
      return `gpuwise plan --model ${path} --gpu GPU`;
    case 'probe-records':
      return `gpuwise doctor --from ${dir}`;
    case 'nvidia-smi':
      return `gpuwise smi --from ${path}`;
    case 'sqlite':
      return `gpuwise smi --replay ${path}`;
    default:
      return null;
  }
}

/**
 * The one line for a file of `kind` given where `expected` was: what it is, what was expected, and the command that
 * reads it. null when it is the expected kind.
 */
export function otherKindProblem(kind: InputKind, expected: InputKind, path: string, dir: string): string | null {
  if (kind === expected) return null;
  const reader = readerOf(kind, path, dir);
  const hint = reader !== null ? `: ${reader} reads it` : '';
  return `${inputKindName(kind)}, not ${inputKindName(expected)}${hint}`;
}
