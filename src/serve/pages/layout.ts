/**
 * The page shell every `gpuwise serve` page shares (pure: strings in, HTML out): navigation, styles, and the
 * uPlot assets referenced by relative URL. Every link is relative to the server's root and every page lives one
 * level below it, so the pages work unchanged behind a path prefix (jupyter-server-proxy's /proxy/PORT/).
 */
import { escapeHtml } from '../../util/html.js';
import { CHARTS_JS } from './clientCharts.js';

/** The one HTML escaping (util/html.ts), under the short name the page builders use. */
export const esc = escapeHtml;
/** A value in a link's query or path. */
export const enc = encodeURIComponent;

/**
 * What a page needs inline to stand alone as one file (the `--html` reports): uPlot's script and style sheet. The
 * pages are pure, so the shell that reads them (serve/assets.ts) hands them over.
 */
export interface InlineAssets {
  uplotJs: string;
  uplotCss: string;
}

/** Script text that cannot close its <script> element early (`<\/script` means the same in JS strings and regexes). */
function inlineScript(js: string): string {
  return `<script>${js.replace(/<\/script/gi, '<\\/script')}</script>`;
}

export type Section = 'runs' | 'reports' | 'live';

export interface PageOptions {
  title: string;
  section: Section | null;
  body: string;
  /** Page scripts run after uPlot has loaded (inline, no external origin). */
  scripts?: string[];
  /** Data for the page scripts, embedded as JSON (read with `JSON.parse(document.getElementById('gw-data').textContent)`). */
  data?: unknown;
  /** Leave the navigation out (the panel a notebook embeds). */
  bare?: boolean;
  /**
   * One self-contained file (a `--html` report): uPlot, the chart code and the styles inline, no navigation (there
   * is no server behind it), a title bar naming the report instead.
   */
  standalone?: { assets: InlineAssets; what: string };
}

/** JSON that is safe inside a <script> element: no `</script>` or `<!--` can close or comment it out. */
export function scriptJson(v: unknown): string {
  return JSON.stringify(v).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

const CSS = `
:root{--fg:#1d2330;--dim:#6b7385;--line:#dfe3ea;--bg:#f6f7f9;--card:#fff;--accent:#2f6fde;--bad:#c0392b;--warn:#b9770e;--ok:#1e8449}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
nav{display:flex;gap:4px;align-items:center;padding:8px 16px;background:#1d2330;color:#fff}
nav b{margin-right:16px;letter-spacing:.02em}
nav span{color:#c9d3e6}
noscript table{margin:6px 0}
nav a{color:#c9d3e6;text-decoration:none;padding:4px 10px;border-radius:4px}
nav a.on,nav a:hover{background:#37415a;color:#fff}
main{max-width:1200px;margin:0 auto;padding:16px}
h1{font-size:20px;margin:4px 0 12px}h2{font-size:16px;margin:20px 0 8px}
.card{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:12px 14px;margin:0 0 12px}
table{border-collapse:collapse;width:100%;background:var(--card)}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--dim);font-size:12px;text-transform:uppercase;letter-spacing:.03em}
.u-legend th,.u-legend td{color:inherit;font-size:12px;text-transform:none;letter-spacing:normal;border:0;padding:2px 4px}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.num{white-space:nowrap}
td.long{overflow-wrap:anywhere;min-width:16em}
td.key{white-space:nowrap}
.tw{overflow-x:auto}
a{color:var(--accent)}
.dim{color:var(--dim)}.bad{color:var(--bad)}.warn{color:var(--warn)}.ok{color:var(--ok)}
.sev{display:inline-block;min-width:58px;text-align:center;font-size:11px;font-weight:700;border-radius:3px;padding:1px 6px;color:#fff}
.sev-high{background:var(--bad)}.sev-medium{background:var(--warn)}.sev-low{background:#7f8c8d}.sev-info{background:#95a5a6}
.verdict{font-size:17px;font-weight:600}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:12px}
.fig{display:inline-block;margin:0 18px 6px 0}.fig b{display:block;font-size:18px}
pre{white-space:pre-wrap;background:#f0f2f5;padding:8px;border-radius:4px;overflow:auto}
code{font-size:12px}
iframe.report{width:100%;border:1px solid var(--line);border-radius:6px;background:#fff;min-height:400px}
.chart{min-height:180px}
form.inline{display:flex;gap:8px;align-items:center;flex-wrap:wrap}
input[type=text]{min-width:420px;padding:5px}
button{padding:5px 12px}
.bar{height:6px;background:#e5e8ee;border-radius:3px;overflow:hidden}.bar>i{display:block;height:100%;background:var(--accent)}
.stack{display:flex;height:16px;background:#e5e8ee;border-radius:3px;overflow:hidden;margin:4px 0}.stack>i{display:block;height:100%}
.sw{display:inline-block;width:10px;height:10px;margin-right:5px;border-radius:2px}
.hb{height:10px;border-radius:2px;background:var(--accent)}.hb.grow{background:var(--bad)}.hb.shrink{background:var(--ok)}
td.bar-cell{width:28%}
.oom{border:2px solid var(--bad)}
h3{font-size:14px;margin:14px 0 6px}
`;

export function page(o: PageOptions): string {
  const nav = o.standalone
    ? `<nav><b>gpuwise</b><span>${esc(o.standalone.what)}</span></nav>`
    : o.bare
    ? ''
    : `<nav><b>gpuwise</b>${(['runs', 'reports', 'live'] as const)
        .map((s) => `<a href="${s}"${o.section === s ? ' class="on"' : ''}>${{ runs: 'Runs', reports: 'Reports', live: 'Live GPUs' }[s]}</a>`)
        .join('')}</nav>`;
  const data = o.data === undefined ? '' : `<script type="application/json" id="gw-data">${scriptJson(o.data)}</script>`;
  const libs = o.standalone
    ? `${inlineScript(o.standalone.assets.uplotJs)}${inlineScript(CHARTS_JS)}`
    : '<script src="assets/uplot.js"></script><script src="assets/charts.js"></script>';
  const scripts = o.scripts?.length ? `${libs}${o.scripts.map((s) => `<script>${s}</script>`).join('')}` : '';
  // A standalone page without charts (plan, memory diff) carries no uPlot at all.
  const uplotCss = o.standalone
    ? o.scripts?.length
      ? `<style>${o.standalone.assets.uplotCss.replace(/<\/style/gi, '')}</style>`
      : ''
    : '<link rel="stylesheet" href="assets/uplot.css">';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(o.title)} · gpuwise</title><link rel="icon" href="data:,">
${uplotCss}<style>${CSS}</style></head>
<body>${nav}<main>${o.body}</main>${data}${scripts}</body></html>
`;
}

/**
 * How a column's cells wrap: `num` a figure (right-aligned, never wrapped), `long` an identifier with no spaces
 * (a kernel name, a source path, a command: may break anywhere, but the column keeps a readable width), `text`
 * words (wrap between words only).
 */
export type ColumnKind = 'num' | 'long' | 'text';

/** A table that scrolls sideways inside its own box when it is wider than the page, instead of squeezing words. */
export function scrollBox(tableHtml: string): string {
  return `<div class="tw">${tableHtml}</div>`;
}

/** A table of text cells (each escaped); `head` null for a two-column list of figures; `kinds` per column (default text). */
export function table(head: string[] | null, rows: string[][], id?: string, kinds: readonly ColumnKind[] = []): string {
  // A list of figures (no head): its names stay on one line, the figures beside them wrap.
  const cls = (i: number) => (kinds[i] === 'num' || kinds[i] === 'long' ? ` class="${kinds[i]}"` : head === null && i === 0 ? ' class="key"' : '');
  return scrollBox(
    `<table${id ? ` id="${id}"` : ''}>${head ? `<thead><tr>${head.map((h, i) => `<th${cls(i)}>${esc(h)}</th>`).join('')}</tr></thead>` : ''}<tbody>${rows.map((r) => `<tr>${r.map((c, i) => `<td${cls(i)}>${esc(c)}</td>`).join('')}</tr>`).join('')}</tbody></table>`,
  );
}

/** At most `n` evenly spread indexes of `len` (the first and the last included): the rows a <noscript> table shows. */
export function spread(len: number, n: number): number[] {
  if (len <= n) return [...Array(len).keys()];
  return [...Array(n).keys()].map((i) => Math.round((i * (len - 1)) / (n - 1)));
}

/** The figures of a chart as a short table, for a reader without JavaScript. */
export function noscriptTable(caption: string, head: string[], rows: string[][]): string {
  return `<noscript><p class="dim">${esc(caption)}</p>${table(head, rows)}</noscript>`;
}

/** The page for a request the server refuses or cannot answer: one line, no stack. */
export function errorPage(status: number, message: string): string {
  return page({ title: `${status}`, section: null, body: `<h1>${status}</h1><p class="bad">${esc(message)}</p><p><a href="runs">Runs</a></p>` });
}
