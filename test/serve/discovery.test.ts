/** The discovery files a `gpuwise serve` leaves in its store for `gpuwise doctor`: which ones doctor believes. */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findServers, removeDiscovery, writeDiscovery } from '../../src/serve/discovery.js';
import { scratch } from './helpers.js';

describe('serve discovery files', () => {
  it('written 0600 and found; files of dead processes, writable by others or damaged are ignored', () => {
    const store = join(scratch('discovery'), 'store');
    expect(findServers(store)).toEqual([]); // no store yet: nothing, no error
    const path = writeDiscovery(store, { url: 'http://127.0.0.1:4242/', token: 't'.repeat(24), pid: process.pid, startedAtMs: 1000 });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const gone = spawnSync('true').pid as number; // a process that has ended
    const file = (name: string, v: unknown, mode = 0o600) => {
      writeFileSync(join(store, name), typeof v === 'string' ? v : JSON.stringify(v));
      chmodSync(join(store, name), mode); // not through umask
    };
    file(`serve-${gone}.json`, { url: 'http://127.0.0.1:1/', token: 'x', pid: gone, startedAtMs: 3000 });
    file('serve-7.json', { url: 'http://127.0.0.1:2/', token: 'x', pid: process.pid, startedAtMs: 4000 }, 0o666);
    file('serve-8.json', '{"url": "http://127.0');
    file('serve-9.json', { url: 'http://evil.example/x', token: 'x', pid: process.pid, startedAtMs: 5000 });
    file('serve-10.json', { url: 'http://127.0.0.1:4343/', token: 'u'.repeat(24), pid: process.ppid, startedAtMs: 2000 });
    // Newest first.
    expect(findServers(store).map((d) => d.url)).toEqual(['http://127.0.0.1:4343/', 'http://127.0.0.1:4242/']);
    removeDiscovery(path);
    expect(existsSync(path)).toBe(false);
    expect(findServers(store).map((d) => d.url)).toEqual(['http://127.0.0.1:4343/']);
  });
});
