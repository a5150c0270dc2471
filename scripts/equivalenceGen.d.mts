/** Types of scripts/equivalenceGen.mjs, the equivalence suite's program generator (issue 43). */

export interface Generated {
  /** `gen_SEED`. */
  name: string;
  /** The program, with its `# equivalence:` declarations in its docstring. */
  text: string;
  /** The data, model, optimizer, behaviours and ending it combines, by id. */
  behaviours: string[];
  stdio: { stdout: string; stderr: string };
  /** Behaviours left out while the case showing their known difference is listed: id -> that case. */
  left: Record<string, string>;
}

export declare function rng(seed: number): {
  next(): number;
  int(lo: number, hi: number): number;
  pick<T>(xs: T[]): T;
  chance(p: number): boolean;
};
export declare function generate(seed: number, known: Set<string> | null): Generated;
export declare function parseSeeds(text: string): number[];
export declare function knownCases(file: string | null): Set<string> | null;
export declare function writePrograms(dir: string, seeds: number[], known: Set<string> | null): Record<string, string>;
export declare const DEFAULT_KNOWN: string;
/** Every case of the suite a behaviour names as the known difference that leaves it out. */
export declare function blockerCases(): Set<string>;
