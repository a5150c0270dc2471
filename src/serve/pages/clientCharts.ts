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
   * gw.chart(el, {xLabel, yLabel, time, series: [{label, dash}], data: [xs, ys1, ...], yFmt, height})
   * Returns the uPlot instance (drag to zoom, double-click to reset: uPlot's own behaviour).
   */
  function chart(el, o) {
    var series = [{ label: o.time ? 'time' : o.xName || 'step' }];
    o.series.forEach(function (s, i) {
      series.push({ label: s.label, stroke: s.color || color(i), width: 1.5, dash: s.dash ? [5, 4] : undefined, spanGaps: false,
        value: o.yFmt ? function (u, v) { return v == null ? '-' : o.yFmt(v); } : undefined });
    });
    var opts = {
      width: width(el), height: o.height || 200, series: series,
      scales: { x: { time: !!o.time }, y: o.yRange ? { range: o.yRange } : {} },
      axes: [{ label: o.time ? undefined : o.xLabel }, { label: o.yLabel, size: 64, values: o.yFmt ? function (u, vs) { return vs.map(o.yFmt); } : undefined }],
      cursor: o.sync ? { drag: { x: true, y: false }, sync: { key: o.sync } } : { drag: { x: true, y: false } },
      hooks: o.hooks || {},
    };
    var u = new uPlot(opts, o.data, el);
    el.setAttribute('data-drawn', String(o.data[0].length));
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
  window.gw = { chart: chart, color: color, fmt: { bytes: bytes, ms: ms, pct: pct, gib: gib } };
})();
`
