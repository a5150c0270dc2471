/** The run history never changes a file that is not its own (issue 20 item 11): refused before WAL mode is set. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { InputError } from '../../src/io/inputError.js';
import { saveRun, storePath } from '../../src/io/runStore.js';
import { sqlite } from '../../src/io/sqlite.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-foreign-store-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('a foreign SQLite file at the store path', () => {
  it('is refused in one line and left byte for byte as it was (not switched to WAL)', async () => {
    const path = storePath(tmp);
    const Database = sqlite();
    const db = new Database(path);
    db.exec('CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)');
    db.exec("INSERT INTO photos (name) VALUES ('holiday.jpg')");
    db.close();
    const before = readFileSync(path);
    // Header bytes 18-19: 1 = rollback journal, 2 = WAL.
    expect([before[18], before[19]]).toEqual([1, 1]);
    const err = await saveRun(tmp, {} as DoctorReport, { cwd: '/', hostname: 'h' }).catch((e) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toMatch(/is a SQLite file but not a gpuwise run history/);
    expect(readFileSync(path).equals(before)).toBe(true);
  });
});
