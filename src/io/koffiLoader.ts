/**
 * Finds koffi at run time (shell), for NVML (live/nvml.ts), doctor's child (nativeSpawn.ts) and gpuwise's own end by
 * a signal (signalDeath.ts). The bundle keeps koffi external because it ships a native
 * `.node` file per platform (in the optional package @koromix/koffi-<os>-<arch>). Looked up in order:
 *   1. $GPUWISE_KOFFI_DIR: a folder holding `koffi/` (a node_modules folder) or koffi itself;
 *   2. the normal Node resolution from this file: node_modules/koffi next to dist/ (or src/).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export type Koffi = typeof import('koffi');

let cached: Koffi | null = null;

export class KoffiMissing extends Error {
  override name = 'KoffiMissing';
}

export function loadKoffi(): Koffi {
  if (cached) return cached;
  const tried: string[] = [];
  const dir = process.env.GPUWISE_KOFFI_DIR;
  if (dir) {
    const candidates = [path.join(dir, 'koffi'), dir, path.join(dir, 'node_modules', 'koffi')];
    for (const c of candidates) {
      if (!existsSync(path.join(c, 'package.json'))) continue;
      try {
        cached = createRequire(path.join(c, 'package.json'))(c) as Koffi;
        return cached;
      } catch (e) {
        tried.push(`${c}: ${(e as Error).message.split('\n')[0]}`);
      }
    }
    if (tried.length === 0) tried.push(`GPUWISE_KOFFI_DIR=${dir} holds no koffi/ folder`);
  }
  try {
    cached = createRequire(import.meta.url)('koffi') as Koffi;
    return cached;
  } catch (e) {
    tried.push(`node_modules/koffi: ${(e as Error).message.split('\n')[0]}`);
  }
  throw new KoffiMissing(`koffi (the FFI used to call NVML) could not be loaded: ${tried.join('; ')}`);
}
