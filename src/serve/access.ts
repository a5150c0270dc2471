/**
 * Who may use the server (pure): the rule every request passes before any route.
 *
 * - A request that carries the server's token (`?token=`, the `gpuwise_token` cookie the first one sets, or
 *   `Authorization: Bearer`) is let in.
 * - Without it, only a server bound to loopback lets a request in, and only when its Host header names loopback
 *   (127.0.0.0/8, ::1, localhost): a web page whose domain was re-pointed at 127.0.0.1 (DNS rebinding) sends its
 *   own name and is refused. A proxy in front (jupyter-server-proxy) forwards the browser's host, so what the
 *   notebook embeds carries the token.
 * - A request that changes something (POST) from a page of another origin is refused (cross-site request forgery).
 */
export interface AccessRequest {
  method: string;
  host: string | undefined;
  origin: string | undefined;
  queryToken: string | null;
  cookie: string | undefined;
  authorization: string | undefined;
}

export type AccessDecision = { ok: true; setCookie: boolean } | { ok: false; status: 401 | 403; reason: string };

export const TOKEN_COOKIE = 'gpuwise_token';

/** The host name of a Host header or URL authority, without port and brackets; null when malformed. */
export function hostName(authority: string): string | null {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+))(?::\d{1,5})?$/.exec(authority.trim());
  if (!m) return null;
  return (m[1] ?? m[2] ?? '').toLowerCase();
}

export function isLoopbackName(name: string): boolean {
  return name === 'localhost' || name === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name) || name.endsWith('.localhost');
}

export function isLoopbackBind(host: string): boolean {
  return isLoopbackName(host.replace(/^\[|\]$/g, '').toLowerCase());
}

/** Compares in time that does not depend on where the strings differ. */
export function sameToken(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (a.charCodeAt(i % Math.max(1, a.length)) || 0) ^ b.charCodeAt(i);
  return diff === 0 && a.length > 0;
}

export function cookieValue(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return null;
}

export function decideAccess(token: string, boundToLoopback: boolean, r: AccessRequest): AccessDecision {
  const host = r.host === undefined ? null : hostName(r.host);
  if (host === null) return { ok: false, status: 403, reason: 'missing or malformed Host header' };
  if (r.method !== 'GET' && r.method !== 'HEAD' && r.origin !== undefined && r.origin !== 'null') {
    let originHost: string | null = null;
    try {
      originHost = new URL(r.origin).host;
    } catch {
      originHost = null;
    }
    if (originHost === null || originHost.toLowerCase() !== r.host!.toLowerCase()) return { ok: false, status: 403, reason: 'cross-origin request refused' };
  }
  const bearer = r.authorization?.startsWith('Bearer ') ? r.authorization.slice(7).trim() : null;
  if (r.queryToken !== null && sameToken(r.queryToken, token)) return { ok: true, setCookie: true };
  for (const t of [cookieValue(r.cookie, TOKEN_COOKIE), bearer]) if (t !== null && sameToken(t, token)) return { ok: true, setCookie: false };
  if (boundToLoopback && isLoopbackName(host)) return { ok: true, setCookie: false };
  return { ok: false, status: 401, reason: 'this server needs its token: open the URL gpuwise serve printed at start (…/?token=…)' };
}
