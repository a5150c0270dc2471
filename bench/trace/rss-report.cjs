// Preloaded into the measured process: reports its peak RSS (bytes) to the file named by GPUWISE_RSS_OUT.
process.on('exit', () => {
  require('node:fs').writeFileSync(process.env.GPUWISE_RSS_OUT, String(process.resourceUsage().maxRSS * 1024));
});
