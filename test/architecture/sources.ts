/** The TypeScript sources under a folder that the architecture tests read (the AssemblyScript scanner and .d.ts aside). */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

export function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    // The AssemblyScript scanner mirrors its record constants with eventScanner.ts: a separate compilation unit.
    return e.name.endsWith('.ts') && !e.name.endsWith('.as.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}
