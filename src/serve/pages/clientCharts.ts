/**
 * Browser code shared by the pages (served as assets/charts.js): a thin layer over uPlot for time series.
 * Plain ES2017 in a string (the pages load it as a classic script); it only reads what the page embeds or
 * streams and never fetches from another origin.
 */
export const CHARTS_JS = `
(function () {
  var PALETTE = ['#2f6fde', '#e4572e', '#17a398', '#f3a712', '#8e44ad', '#29335c', '#a8c686', '#db2b39'];
  function color(i) { return PALETTE[i % PALETTE.length]; }
  function width(el) { return Math.max(280, Math.floor(el.getBoundingClientRect().width || 600)); }
  /**
   * gw.chart(el, {xLabel, yLabel, time, series: [{label, dash, color, fill, points, spanGaps}], data: [xs, ys1, ...],
   *   yFmt, height, yRange, bars, stacked, marks: [{x, label}]})
   * bars: one bar per x (steps); stacked: each series sits on the ones before it (drawn tallest first, so each
   * part paints over the one above it; the legend shows each part's own value); marks: dashed vertical lines;
   * points: true draws every point as a dot (a few trials, not a dense series), false none (a computed line;
   * uPlot's default shows them on sparse data); spanGaps: the line joins
   * points across x values the series has no figure for.
   * Returns the uPlot instance (drag to zoom, double-click to reset: uPlot's own behaviour).
   */
  function chart(el, o) {
    var data = o.data, order = o.series.map(function (_, i) { return i; });
    if (o.stacked) {
      var acc = data[0].map(function () { return 0; }), cum = [];
      for (var k = 1; k < data.length; k++) { acc = acc.map(function (a, j) { return a + (data[k][j] || 0); }); cum.push(acc); }
      order.reverse();
      data = [data[0]].concat(order.map(function (i) { return cum[i]; }));
    }
    var series = [{ label: o.time ? 'time' : o.xName || 'step' }];
    order.forEach(function (i) {
      var s = o.series[i], c = s.color || color(i);
      var raw = o.stacked ? o.data[i + 1] : null;
      series.push({ label: s.label, stroke: c, width: o.bars ? 0 : 1.5, dash: s.dash ? [5, 4] : undefined, spanGaps: !!s.spanGaps,
        points: s.points === undefined ? undefined : { show: !!s.points, size: 7, fill: c },
        fill: o.bars ? c : s.fill, paths: o.bars ? uPlot.paths.bars({ size: [0.8, 60], align: 0 }) : undefined,
        value: !o.yFmt && !raw ? undefined : function (u, v, si, idx) { if (raw && idx != null) v = raw[idx]; return v == null ? '-' : o.yFmt ? o.yFmt(v) : String(+v.toFixed(3)); } });
    });
    var xs = data[0];
    var opts = {
      width: width(el), height: o.height || 200, series: series,
      scales: { x: o.bars ? { time: false, range: function () { return [xs[0] - 0.6, xs[xs.length - 1] + 0.6]; } } : { time: !!o.time },
        y: o.yRange ? { range: o.yRange } : o.bars ? { range: function (u, min, max) { return [0, max * 1.05 || 1]; } } : {} },
      axes: [o.bars || o.xInt ? { label: o.xLabel, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] } : { label: o.time ? undefined : o.xLabel }, { label: o.yLabel, size: 64, values: o.yFmt ? function (u, vs) { return vs.map(o.yFmt); } : undefined }],
      cursor: o.sync ? { drag: { x: true, y: false }, sync: { key: o.sync } } : { drag: { x: true, y: false } },
      hooks: Object.assign({}, o.hooks),
    };
    if (o.marks && o.marks.length) {
      opts.hooks.draw = (opts.hooks.draw || []).concat([function (u) {
        var ctx = u.ctx; ctx.save(); ctx.strokeStyle = '#c0392b'; ctx.fillStyle = '#c0392b'; ctx.setLineDash([4, 3]); ctx.lineWidth = 1.5;
        ctx.font = (11 * devicePixelRatio) + 'px system-ui,sans-serif';
        o.marks.forEach(function (m, i) {
          var x = u.valToPos(m.x, 'x', true);
          if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
          ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
          // Labels near the right edge go to the left of their line, so they stay inside the plot.
          var right = x > u.bbox.left + u.bbox.width * 0.75;
          ctx.textAlign = right ? 'right' : 'left';
          ctx.fillText(m.label, right ? x - 4 : x + 4, u.bbox.top + (12 + 14 * i) * devicePixelRatio);
        });
        ctx.restore();
      }]);
    }
    var u = new uPlot(opts, data, el);
    el.setAttribute('data-drawn', String(xs.length));
    window.addEventListener('resize', function () { u.setSize({ width: width(el), height: o.height || 200 }); });
    return u;
  }
  function bytes(v) {
    var a = Math.abs(v);
    if (a === 0) return '0';
    if (a >= 1073741824) return (v / 1073741824).toFixed(a >= 10737418240 ? 0 : 1) + ' GiB';
    if (a >= 1048576) return (v / 1048576).toFixed(0) + ' MiB';
    return (v / 1024).toFixed(0) + ' KiB';
  }
  function ms(v) { return v === 0 ? '0' : v >= 1000 ? (v / 1000).toFixed(2) + ' s' : v >= 10 ? v.toFixed(0) + ' ms' : v.toFixed(2) + ' ms'; }
  function pct(v) { return v.toFixed(0) + '%'; }
  function gib(v) { return (Math.abs(v) >= 10 || v === 0 ? v.toFixed(0) : v.toFixed(1)) + ' GiB'; }
  // A GPU's memory: GiB with one decimal, as every report gives it (util/format.ts fmtGpuMemory).
  function gpuMemory(v) { return (v / 1073741824).toFixed(1) + ' GiB'; }
  window.gw = { chart: chart, color: color, fmt: { bytes: bytes, ms: ms, pct: pct, gib: gib, gpuMemory: gpuMemory } };
})();
`
