/** Request bodies and refusals shared by the routes (shell): a bounded body reader and the error a route throws to refuse. */
import type { IncomingMessage } from 'node:http';

/** The request asked for more than the server takes, or for nothing it has: the server answers with `status`. */
export class RefusedError extends Error {
  constructor(
    readonly status: 413 | 503 | 400 | 404,
    message: string,
  ) {
    super(message);
  }
}

/** Bodies other than uploads (forms, probe records) are at most this large. */
export const MAX_SMALL_BODY = 8 << 20;

/** Reads a small request body; refuses past `max` bytes. */
export function readBody(req: IncomingMessage, max = MAX_SMALL_BODY): Promise<Buffer> {
  return new Promise((ok, no) => {
    const parts: Buffer[] = [];
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
      if (n > max) {
        no(new RefusedError(413, `request body over ${max} bytes`));
        req.destroy();
        return;
      }
      parts.push(c);
    });
    req.on('end', () => ok(Buffer.concat(parts)));
    req.on('error', no);
  });
}
