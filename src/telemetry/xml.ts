/**
 * A small, strict XML reader for `nvidia-smi -q -x` output: elements, attributes, text and the five
 * predefined entities. No namespaces, CDATA or DTD processing (nvidia-smi emits none beyond a
 * DOCTYPE line, which is skipped). Mismatched or unclosed tags are errors, not guesses.
 */
import { TelemetryParseError } from './sample.js';

export interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: XmlElement[];
  /** Concatenated, trimmed text directly inside this element. */
  text: string;
}

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodeEntities(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (m, e: string) => {
    if (e[0] === '#') {
      const code = e[1] === 'x' ? Number.parseInt(e.slice(2), 16) : Number(e.slice(1));
      // Beyond Unicode (or a surrogate) is not a character: malformed XML, said in one line.
      if (!(code <= 0x10ffff) || (code >= 0xd800 && code <= 0xdfff))
        throw new TelemetryParseError(`invalid character reference ${m.slice(0, 24)} in the XML`);
      return String.fromCodePoint(code);
    }
    return XML_ENTITIES[e] ?? m;
  });
}

function lineOf(text: string, pos: number): number {
  let line = 1;
  for (let i = 0; i < pos && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** Parses a whole document and returns its root element. */
export function parseXml(text: string): XmlElement {
  const stack: XmlElement[] = [];
  const textParts: string[][] = [];
  let root: XmlElement | null = null;
  let i = 0;
  const fail = (msg: string, at: number): never => {
    throw new TelemetryParseError(`malformed XML at line ${lineOf(text, at)}: ${msg}`);
  };
  while (i < text.length) {
    const lt = text.indexOf('<', i);
    const chunk = lt < 0 ? text.slice(i) : text.slice(i, lt);
    if (chunk.trim() !== '') {
      const parts = textParts[textParts.length - 1];
      if (parts === undefined) fail('text outside the root element', i);
      else parts.push(decodeEntities(chunk));
    }
    if (lt < 0) break;
    if (text.startsWith('<?', lt)) {
      const end = text.indexOf('?>', lt);
      if (end < 0) fail('unterminated processing instruction', lt);
      i = end + 2;
    } else if (text.startsWith('<!--', lt)) {
      const end = text.indexOf('-->', lt);
      if (end < 0) fail('unterminated comment', lt);
      i = end + 3;
    } else if (text.startsWith('<!', lt)) {
      const end = text.indexOf('>', lt);
      if (end < 0) fail('unterminated declaration', lt);
      i = end + 1;
    } else if (text.startsWith('</', lt)) {
      const end = text.indexOf('>', lt);
      if (end < 0) fail('unterminated closing tag', lt);
      const name = text.slice(lt + 2, end).trim();
      const open = stack.pop();
      const parts = textParts.pop();
      if (open === undefined || parts === undefined) return fail(`closing tag </${name}> without an opening tag`, lt);
      if (open.name !== name) fail(`</${name}> closes <${open.name}>`, lt);
      open.text = parts.join('').trim();
      i = end + 1;
    } else {
      const end = text.indexOf('>', lt);
      if (end < 0) fail('unterminated tag', lt);
      let body = text.slice(lt + 1, end);
      const selfClosing = body.endsWith('/');
      if (selfClosing) body = body.slice(0, -1);
      const m = /^([A-Za-z_][\w.:-]*)/.exec(body);
      if (!m) return fail(`bad tag name in <${body.slice(0, 20)}>`, lt);
      const el: XmlElement = { name: m[1]!, attrs: {}, children: [], text: '' };
      const attrRe = /\s+([\w.:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/y;
      let pos = m[1]!.length;
      for (;;) {
        attrRe.lastIndex = pos;
        const am = attrRe.exec(body);
        if (am === null) break;
        el.attrs[am[1]!] = decodeEntities(am[2] ?? am[3] ?? '');
        pos = attrRe.lastIndex;
      }
      if (body.slice(pos).trim() !== '') fail(`bad attributes in <${m[1]}>`, lt);
      const parent = stack[stack.length - 1];
      if (parent) parent.children.push(el);
      else if (root === null) root = el;
      else fail('more than one root element', lt);
      if (!selfClosing) {
        stack.push(el);
        textParts.push([]);
      }
      i = end + 1;
    }
  }
  if (stack.length > 0) fail(`<${stack[stack.length - 1]!.name}> is never closed (file truncated?)`, text.length);
  if (root === null) fail('no root element', 0);
  return root as unknown as XmlElement;
}

/** The first child with this name, following a path of names. */
export function child(el: XmlElement | undefined, ...path: string[]): XmlElement | undefined {
  let cur = el;
  for (const name of path) {
    cur = cur?.children.find((c) => c.name === name);
    if (cur === undefined) return undefined;
  }
  return cur;
}

/** Text at a path, or undefined. */
export function textAt(el: XmlElement | undefined, ...path: string[]): string | undefined {
  return child(el, ...path)?.text;
}
