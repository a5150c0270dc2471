/**
 * Shell: a full garbage collection on request. Reading a large snapshot leaves
 * the file's bytes and the raw pickle graph as garbage at known points; V8
 * would collect them only once the heap has grown further, which is what made
 * peak RSS exceed 4x the file size. Same technique as Jest's leak detector:
 * expose `gc` through V8 flags and fetch it from a fresh context.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | null | undefined;

export function collectGarbage(): void {
  if (gc === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      const fn: unknown = runInNewContext('gc');
      gc = typeof fn === 'function' ? (fn as () => void) : null;
    } catch {
      gc = null;
    }
  }
  gc?.();
}
