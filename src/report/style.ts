/** How text reports mark emphasis and severity (pure): plain, or ANSI colour on a terminal (cli/color.ts chooses). */
import type { Severity } from '../findings/finding.js';

export interface Style {
  bold(s: string): string;
  dim(s: string): string;
  severity(s: Severity, text: string): string;
}

export const PLAIN: Style = { bold: (s) => s, dim: (s) => s, severity: (_s, t) => t };

export const ANSI: Style = {
  bold: (s) => `\x1b[1m${s}\x1b[22m`,
  dim: (s) => `\x1b[2m${s}\x1b[22m`,
  severity: (s, t) => `${{ high: '\x1b[1;31m', medium: '\x1b[33m', low: '\x1b[36m', info: '\x1b[2m' }[s]}${t}\x1b[0m`,
};
