/** A one-line progress bar on stderr (only drawn for inputs big enough to wait for). */
const MIN_BYTES = 32 * 1024 * 1024;

export function progressBar(label: string): { update: (done: number, total: number) => void; done: () => void } {
  let last = 0;
  let drawn = false;
  const name = label.split('/').pop() ?? label;
  return {
    update(done, total) {
      if (total < MIN_BYTES) return;
      const now = Date.now();
      if (now - last < 100 && done < total) return;
      last = now;
      const frac = total > 0 ? Math.min(1, done / total) : 0;
      const width = 30;
      const n = Math.round(frac * width);
      process.stderr.write(`\r${name.slice(-40)} [${'#'.repeat(n)}${'.'.repeat(width - n)}] ${(frac * 100).toFixed(0).padStart(3)}%`);
      drawn = true;
    },
    done() {
      if (drawn) process.stderr.write('\r\x1b[K');
    },
  };
}
