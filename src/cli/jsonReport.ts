/**
 * A command's `--json` output, with the gpuwise version beside its schemaVersion: one version number for the npm
 * and the pip package (package.json's), in every JSON report. Commands whose report type already carries
 * `version` (analyze, doctor, tune) write the same value.
 */
import { VERSION } from '../util/version.js';

export function jsonReport(value: object): string {
  const { schemaVersion, ...rest } = value as { schemaVersion?: unknown };
  return `${JSON.stringify({ schemaVersion, version: VERSION, ...rest }, null, 2)}\n`;
}
