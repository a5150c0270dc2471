/**
 * The Live GPUs page (pure): per GPU a card with its current figures and two zoomable charts (utilisation and
 * memory over time), and the processes on the GPUs with owner, rank and job. The browser code reads the history
 * once (api/live/history) and then follows one event stream (api/live/stream); it bounds what it holds (older
 * points are thinned past MAX_POINTS) and redraws at most a few times a second, whatever the sample rate.
 */
import { page } from './layout.js';

export const LIVE_PAGE_JS = `
(function () {
  // Charts redraw when a new sample moves them by about a pixel: every 250 ms over 15 minutes, every few seconds
  // over a day (the figures above the charts still change with every frame).
  var MAX_POINTS = 4000, REDRAW_MIN_MS = 250, REDRAW_MAX_MS = 5000, redrawMs = REDRAW_MIN_MS;
  var cfg = JSON.parse(document.getElementById('gw-data').textContent);
  var cards = document.getElementById('gpus'), statusEl = document.getElementById('live-status'), procBody = document.querySelector('#procs tbody');
  var t = [], gpus = {}, order = [], dirty = false, follow = true, lastDraw = 0, frames = 0;
  var GIB = 1073741824;
  function fmtB(v) { return v == null ? 'n/a' : gw.fmt.bytes(v); }
  function gib(v) { return v == null ? null : v / GIB; }
  function esc(s) { return String(s).replace(/[&<>"']/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]; }); }
  function gpuEntry(index, name) {
    var g = gpus[index];
    if (g) return g;
    var card = document.createElement('div'); card.className = 'card gpu'; card.setAttribute('data-gpu', index);
    card.innerHTML = '<div class="head"><b>GPU ' + index + '</b> <span class="name dim"></span></div><div class="figs"></div><div class="chart util"></div><div class="chart mem"></div>';
    cards.appendChild(card);
    g = gpus[index] = { card: card, util: [], mem: [], power: [], uU: null, uM: null };
    // Backfill so every GPU's arrays line up with the shared time axis.
    for (var i = 0; i < t.length; i++) { g.util.push(null); g.mem.push(null); g.power.push(null); }
    order.push(index); order.sort(function (a, b) { return a - b; });
    return g;
  }
  function makeCharts(g) {
    // A drag selects a time range (uPlot zooms to it): stop following new samples until 'follow' is ticked again.
    var hooks = { setSelect: [function (u) { if (u.select.width > 0) { follow = false; document.getElementById('follow').checked = false; } }] };
    g.uU = gw.chart(g.card.querySelector('.util'), { time: true, yLabel: 'utilisation %', series: [{ label: 'GPU util %' }], data: [t, g.util], height: 150, yRange: [0, 100], yFmt: gw.fmt.pct, hooks: hooks, sync: 'gw-live' });
    // Memory in GiB (round ticks), from 0 to the GPU's total.
    g.uM = gw.chart(g.card.querySelector('.mem'), { time: true, yLabel: 'memory used', series: [{ label: 'used', color: '#17a398' }], data: [t, g.mem], height: 150, yFmt: gw.fmt.gib,
      yRange: g.total ? [0, g.total / GIB] : undefined, hooks: hooks, sync: 'gw-live' });
  }
  function thin() {
    // Halve the older half: the page holds at most MAX_POINTS per series however long it stays open.
    var half = Math.floor(t.length / 2), keep = function (a) { var out = []; for (var i = 0; i < half; i += 2) out.push(a[i]); return out.concat(a.slice(half)); };
    t = keep(t);
    order.forEach(function (i) { var g = gpus[i]; g.util = keep(g.util); g.mem = keep(g.mem); g.power = keep(g.power); });
  }
  function loadHistory(h) {
    t = h.tS.slice();
    h.gpus.forEach(function (s) { var g = gpuEntry(s.index, s.name); g.util = s.utilPercent.slice(); g.mem = s.memUsedBytes.map(gib); g.power = s.powerW.slice(); g.total = s.memTotalBytes; g.card.querySelector('.name').textContent = s.name; });
    order.forEach(function (i) { var g = gpus[i]; while (g.util.length < t.length) { g.util.unshift(null); g.mem.unshift(null); g.power.unshift(null); } });
    document.getElementById('history-points').textContent = String(t.length);
    var spanMs = t.length > 1 ? (t[t.length - 1] - t[0]) * 1000 : 0, px = cards.getBoundingClientRect().width || 1000;
    redrawMs = Math.min(REDRAW_MAX_MS, Math.max(REDRAW_MIN_MS, spanMs / px));
    dirty = true; draw(true);
  }
  function figs(g) {
    // The memory CUDA can use: NVML's total less the driver's reservation (telemetry/sample.ts usableMemoryBytes).
    var used = g.memUsedBytes, total = g.memTotalBytes == null ? null : g.memTotalBytes - (g.memReservedBytes || 0), pct = used != null && total ? 100 * used / total : null;
    var thr = g.throttle == null ? 'n/a' : g.throttle.length ? g.throttle.join(', ') : 'none';
    return '<span class="fig"><span class="dim">util</span><b>' + (g.utilPercent == null ? 'n/a' : g.utilPercent + '%') + '</b></span>' +
      '<span class="fig"><span class="dim">memory used</span><b>' + fmtB(used) + (total ? ' / ' + gw.fmt.gpuMemory(total) : '') + '</b></span>' +
      '<span class="fig"><span class="dim">power</span><b>' + (g.powerW == null ? 'n/a' : g.powerW.toFixed(0) + ' W') + (g.powerLimitW ? ' / ' + g.powerLimitW.toFixed(0) + ' W' : '') + '</b></span>' +
      '<span class="fig"><span class="dim">temp</span><b>' + (g.tempC == null ? 'n/a' : g.tempC + ' °C') + '</b></span>' +
      '<span class="fig"><span class="dim">SM clock</span><b>' + (g.smClockMhz == null ? 'n/a' : g.smClockMhz + (g.smClockMaxMhz ? ' / ' + g.smClockMaxMhz : '') + ' MHz') + '</b></span>' +
      '<div class="bar"><i style="width:' + (pct == null ? 0 : pct.toFixed(1)) + '%"></i></div><div class="dim">clock events: ' + esc(thr) +
      (g.memReservedBytes ? '; driver-reserved ' + fmtB(g.memReservedBytes) : '') + (g.lost ? ' <b class="bad">GPU LOST</b>' : '') + '</div>';
  }
  function onFrame(f) {
    frames++;
    if (t.length && f.tMs / 1000 <= t[t.length - 1]) return;
    t.push(f.tMs / 1000);
    var seen = {};
    f.gpus.forEach(function (x) {
      var g = gpuEntry(x.index, x.name); seen[x.index] = 1;
      g.util.push(x.utilPercent); g.mem.push(gib(x.memUsedBytes)); g.power.push(x.powerW); g.total = x.memTotalBytes || g.total;
      g.card.querySelector('.name').textContent = x.name + (x.cudaIndex != null ? ' (cuda:' + x.cudaIndex + ')' : '');
      g.card.querySelector('.figs').innerHTML = figs(x);
    });
    order.forEach(function (i) { if (!seen[i]) { gpus[i].util.push(null); gpus[i].mem.push(null); gpus[i].power.push(null); } });
    if (t.length > MAX_POINTS) thin();
    procBody.innerHTML = f.processes.length ? f.processes.map(function (p) {
      return '<tr><td class="num">' + p.pid + '</td><td class="num">' + p.gpu + '</td><td>' + esc(p.user || '') + '</td><td>' + (p.rank == null ? '' : p.rank + (p.worldSize ? '/' + p.worldSize : '')) + '</td><td>' + esc(p.job || '') +
        '</td><td class="num">' + fmtB(p.usedBytes) + '</td><td class="num">' + (p.allocatedBytes == null ? '' : fmtB(p.allocatedBytes) + ' / ' + fmtB(p.reservedBytes)) + '</td><td class="num">' + (p.smPercent == null ? 'n/a' : p.smPercent + '%') +
        '</td><td class="num">' + (p.cpuPercent == null ? 'n/a' : p.cpuPercent.toFixed(0) + '%') + '</td><td class="long"><code>' + esc(p.command || p.name || '') + '</code></td></tr>';
    }).join('') : '<tr><td colspan="10" class="dim">no process holds a GPU</td></tr>';
    document.getElementById('sample-time').textContent = new Date(f.tMs).toLocaleTimeString();
    document.getElementById('host').textContent = (f.host || '') + (f.driver ? ', driver ' + f.driver : '');
    dirty = true;
  }
  function draw(force) {
    var now = performance.now();
    if (!dirty || (!force && now - lastDraw < redrawMs)) return;
    lastDraw = now; dirty = false;
    order.forEach(function (i) {
      var g = gpus[i];
      if (!g.uU) makeCharts(g);
      else { g.uU.setData([t, g.util], follow); g.uM.setData([t, g.mem], follow); }
      g.card.querySelector('.util').setAttribute('data-drawn', String(t.length));
    });
  }
  setInterval(function () { draw(false); }, REDRAW_MIN_MS);
  document.getElementById('follow').addEventListener('change', function (e) { follow = e.target.checked; dirty = true; draw(true); });
  function connect() {
    var es = new EventSource('api/live/stream');
    es.onmessage = function (e) { onFrame(JSON.parse(e.data)); };
    es.addEventListener('status', function (e) {
      var s = JSON.parse(e.data);
      statusEl.textContent = s.problem ? s.problem : (s.source ? 'sampling through ' + s.source + ' every ' + s.intervalMs + ' ms' : 'starting...');
      statusEl.className = s.problem ? 'warn' : 'dim';
      // No GPU read yet and the sampler says why: say it where the GPUs and processes would be, not "waiting".
      var none = document.getElementById('no-gpu');
      if (s.problem && !frames && !order.length) {
        if (!none) { none = document.createElement('div'); none.id = 'no-gpu'; none.className = 'card warn'; cards.parentNode.insertBefore(none, cards); }
        none.textContent = s.problem;
        statusEl.textContent = 'no GPU sampled';
        procBody.innerHTML = '<tr><td colspan="10" class="dim">no GPU sampled</td></tr>';
      } else if (none && !s.problem) none.remove();
    });
    window.gwLive = { frames: function () { return frames; }, points: function () { return t.length; }, source: es };
  }
  var range = document.getElementById('range');
  function fetchHistory() {
    return fetch('api/live/history?seconds=' + range.value + '&points=' + MAX_POINTS / 2).then(function (r) { return r.json(); }).then(loadHistory);
  }
  range.addEventListener('change', function () { follow = true; document.getElementById('follow').checked = true; fetchHistory(); });
  fetchHistory().then(connect, connect);
})();
`

export interface LivePageOptions {
  /** The panel a notebook embeds: no navigation, no history range picker. */
  bare?: boolean;
}

export function livePage(o: LivePageOptions = {}): string {
  const body = `${o.bare ? '' : '<h1>Live GPUs</h1>'}
<div class="card" style="display:flex;flex-wrap:wrap;gap:6px 16px;justify-content:space-between"><span><span id="live-status" class="dim">connecting...</span> · <span id="host" class="dim"></span> · last sample <span id="sample-time">-</span></span>
<span>history <select id="range"><option value="900">15 min</option><option value="3600" selected>1 hour</option><option value="21600">6 hours</option><option value="86400">24 hours</option></select>
<label><input type="checkbox" id="follow" checked> follow</label> <span class="dim">(<span id="history-points">0</span> points; drag to zoom, double-click to reset)</span></span></div>
<div class="grid" id="gpus"></div>
<h2>Processes</h2><div class="tw"><table id="procs"><thead><tr><th class="num">pid</th><th class="num">GPU</th><th>user</th><th>rank</th><th>job</th><th class="num">GPU memory</th><th class="num">allocated / reserved</th><th class="num">SM</th><th class="num">CPU</th><th>command</th></tr></thead><tbody><tr><td colspan="10" class="dim">waiting for the first sample</td></tr></tbody></table></div>`;
  return page({ title: 'Live GPUs', section: 'live', body, bare: o.bare, data: {}, scripts: [LIVE_PAGE_JS] });
}
