/** Types of scripts/updateDocExcerpts.mjs for the test that imports it (test/docs/excerpts.test.ts). */
export interface Excerpt {
  file: string;
  line: number;
  args: string[];
  from: string | null;
  start: number;
  end: number;
  /** The body between the fences, or null when the excerpt is not one fenced block. */
  quoted: string | null;
}
export const ROOT: string;
export function docFiles(): string[];
export function findExcerpts(text: string, file: string): Excerpt[];
export function excerptOf(output: string, from: string | null, what: string): string;
export function outputOf(args: string[]): string;
