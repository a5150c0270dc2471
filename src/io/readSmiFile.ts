/**
 * Reads nvidia-smi output files a user attached (`smi --from`, `select --from`): `nvidia-smi -q -x`
 * XML, `--query-gpu` CSV and `--query-compute-apps` CSV, or the plain `nvidia-smi` table, plain or
 * gzip-compressed. Several files combine: one GPU listing plus compute-app listings.
 */

/** What `--from` accepts, for the line that refuses anything else. */
export const SMI_FORMATS =
  "accepted: the plain 'nvidia-smi' table, 'nvidia-smi -q -x' XML, 'nvidia-smi --query-gpu=... --format=csv' CSV (plus '--query-compute-apps' CSV)";
import { TelemetryParseError, type Snapshot } from '../telemetry/sample.js';
import { type AppRow, attachApps, isAppsCsv, parseAppsCsv, parseGpuCsv } from '../telemetry/smiCsv.js';
import { isSmiTable, parseSmiTable } from '../telemetry/smiTable.js';
import { parseSmiXml } from '../telemetry/smiXml.js';
import { InputError } from './inputError.js';
import { MiB } from '../util/units.js';
import { gunzipLimited, isGzip, readFileLimited } from './readLimited.js';
import { asOtherInput } from './otherInput.js';

/** nvidia-smi listings are kilobytes (a few hundred KB for a large host's process table): far above, not a listing. */
const MAX_SMI_BYTES = 64 * MiB;
const WHAT = 'an nvidia-smi listing';

function readText(path: string): string {
  let bytes = readFileLimited(path, MAX_SMI_BYTES, WHAT);
  if (isGzip(bytes)) bytes = gunzipLimited(path, bytes, MAX_SMI_BYTES, WHAT);
  if (bytes.includes(0)) throw new InputError(path, `binary data, not nvidia-smi output (${SMI_FORMATS})`);
  return bytes.toString('utf8');
}

export function readSmiFiles(paths: readonly string[]): Snapshot {
  let snapshot: Snapshot | null = null;
  const apps: AppRow[] = [];
  for (const path of paths) {
    try {
      const text = readText(path);
      const head = text.trimStart();
      if (isSmiTable(text)) {
        if (snapshot) throw new TelemetryParseError('a second GPU listing; give one nvidia-smi table, XML or --query-gpu file (plus compute-app CSVs)');
        snapshot = parseSmiTable(text);
      } else if (head.startsWith('<')) {
        if (snapshot) throw new TelemetryParseError('a second GPU listing; give one XML or --query-gpu file (plus compute-app CSVs)');
        snapshot = parseSmiXml(text);
      } else if (isAppsCsv(text)) apps.push(...parseAppsCsv(text));
      else {
        if (snapshot) throw new TelemetryParseError('a second GPU listing; give one XML or --query-gpu file (plus compute-app CSVs)');
        // Text with no comma in its first line is no CSV at all: say what is accepted rather than how it failed.
        if (!(head.split('\n')[0] ?? '').includes(',') && !/^\d+\s*$/.test(head.split('\n')[0] ?? '')) throw new TelemetryParseError(`not nvidia-smi output gpuwise reads (${SMI_FORMATS})`);
        snapshot = parseGpuCsv(text);
      }
    } catch (e) {
      // A trace, a snapshot...: said as what it is.
      throw asOtherInput(e instanceof TelemetryParseError ? new InputError(path, e.message) : e, path, 'nvidia-smi');
    }
  }
  if (snapshot === null)
    throw new InputError(paths.join(', '), 'only compute-app listings; add the --query-gpu CSV or -q -x XML of the same host');
  return apps.length > 0 ? attachApps(snapshot, apps) : snapshot;
}
