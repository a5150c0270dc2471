/** The pure parts of serve: the access rule, the live history ring, the live frame. */
import { describe, expect, it } from 'vitest';
import { type AccessRequest, decideAccess, hostName, isLoopbackBind } from '../../src/serve/access.js';
import { SeriesRing, frameOf, type LiveGpu } from '../../src/serve/liveFrame.js';
import { scriptJson } from '../../src/serve/pages/layout.js';
import { smiSample } from './fixtures.js';

const TOKEN = 'abcdefghijklmnopqrstuvwx';
const get = (over: Partial<AccessRequest>): AccessRequest => ({ method: 'GET', host: '127.0.0.1:8080', origin: undefined, queryToken: null, cookie: undefined, authorization: undefined, ...over });

describe('access rule', () => {
  it('lets loopback names in on a loopback server, without the token', () => {
    for (const host of ['127.0.0.1:8080', 'localhost:1', '[::1]:9', '127.3.2.1']) expect(decideAccess(TOKEN, true, get({ host })).ok).toBe(true);
  });
  it('refuses another host name on a loopback server (DNS rebinding) unless the token comes with it', () => {
    const d = decideAccess(TOKEN, true, get({ host: 'attacker.example:8080' }));
    expect(d).toMatchObject({ ok: false, status: 401 });
    expect(decideAccess(TOKEN, true, get({ host: 'attacker.example:8080', queryToken: TOKEN }))).toEqual({ ok: true, setCookie: true });
    expect(decideAccess(TOKEN, true, get({ host: 'hub.example', cookie: `a=b; gpuwise_token=${TOKEN}` }))).toEqual({ ok: true, setCookie: false });
    expect(decideAccess(TOKEN, true, get({ host: 'hub.example', authorization: `Bearer ${TOKEN}` })).ok).toBe(true);
    expect(decideAccess(TOKEN, true, get({ host: 'hub.example', queryToken: `${TOKEN}x` })).ok).toBe(false);
    expect(decideAccess(TOKEN, true, get({ host: 'hub.example', queryToken: '' })).ok).toBe(false);
  });
  it('needs the token for every request on a non-loopback server, loopback Host included', () => {
    expect(decideAccess(TOKEN, false, get({ host: '127.0.0.1:8080' })).ok).toBe(false);
    expect(decideAccess(TOKEN, false, get({ host: '10.0.0.5:8080', queryToken: TOKEN })).ok).toBe(true);
  });
  it('refuses a POST from a page of another origin, even with loopback Host', () => {
    expect(decideAccess(TOKEN, true, get({ method: 'POST', origin: 'https://evil.example' }))).toMatchObject({ ok: false, status: 403 });
    expect(decideAccess(TOKEN, true, get({ method: 'POST', origin: 'http://127.0.0.1:8080' })).ok).toBe(true);
    expect(decideAccess(TOKEN, true, get({ method: 'POST' })).ok).toBe(true); // no Origin: not a browser form of another site
  });
  it('refuses a missing or malformed Host', () => {
    expect(decideAccess(TOKEN, true, get({ host: undefined })).ok).toBe(false);
    expect(decideAccess(TOKEN, true, get({ host: 'a b:1' })).ok).toBe(false);
    expect(hostName('[::1]:80')).toBe('::1');
    expect(isLoopbackBind('0.0.0.0')).toBe(false);
    expect(isLoopbackBind('::1')).toBe(true);
  });
});

describe('live frame and history ring', () => {
  const snap = smiSample();
  it('keeps every GPU and process of a real nvidia-smi sample, nulls as nulls', () => {
    const f = frameOf(snap, 1000);
    expect(f.gpus.length).toBe(snap.gpus.length);
    expect(f.processes.length).toBe(snap.gpus.reduce((a, g) => a + g.processes.length, 0));
    expect(f.gpus[0]!.memTotalBytes).toBe(snap.gpus[0]!.memoryTotalBytes);
    expect(f.gpus[0]!.utilPercent).toBe(snap.gpus[0]!.utilizationGpuPercent);
  });
  it('holds at most its capacity, newest kept, thinned to the points asked for', () => {
    const gpus = frameOf(snap, 0).gpus;
    const ring = new SeriesRing(100);
    for (let i = 0; i < 250; i++) ring.push(1000 * (i + 1), gpus.map((g) => ({ ...g, utilPercent: i % 101 })));
    expect(ring.length).toBe(100);
    const h = ring.history(0, 1000);
    expect(h.tS.length).toBe(100);
    expect(h.tS[0]).toBe(151);
    expect(h.tS.at(-1)).toBe(250);
    expect(h.gpus[0]!.utilPercent.at(-1)).toBe(249 % 101);
    const thin = ring.history(0, 10);
    expect(thin.tS.length).toBeLessThanOrEqual(10);
    expect(thin.tS.at(-1)).toBe(250); // the newest point is always kept
    expect(ring.history(200_000, 1000).tS.length).toBe(51);
  });
  it('drops samples older than the last (charts need ascending time), and marks a missing GPU as null', () => {
    const [g0, g1] = frameOf(snap, 0).gpus as [LiveGpu, LiveGpu];
    const ring = new SeriesRing(10);
    ring.push(2000, [g0, g1]);
    ring.push(1000, [g0, g1]);
    ring.push(3000, [{ ...g0, utilPercent: null }]);
    const h = ring.history(0, 10);
    expect(h.tS).toEqual([2, 3]);
    expect(h.gpus[0]!.utilPercent[1]).toBeNull();
    expect(h.gpus[1]!.memUsedBytes[1]).toBeNull();
  });
});

describe('page data', () => {
  it('embeds JSON that cannot close its script element', () => {
    const s = scriptJson({ x: '</script><script>alert(1)</script>' });
    expect(s).not.toContain('</script>');
    expect(JSON.parse(s)).toEqual({ x: '</script><script>alert(1)</script>' });
  });
});
