/**
 * The version and exit statuses every command shares, apart from the dispatcher (cli/main.ts), so a command module
 * never imports the module that lazily imports it (no cycle).
 */
declare const __GPUWISE_VERSION__: string | undefined;
/** Set by the bundle (scripts/buildConfig.mjs); `0.0.0-dev` when run from the sources. */
export const VERSION = typeof __GPUWISE_VERSION__ === 'string' ? __GPUWISE_VERSION__ : '0.0.0-dev';

export const EXIT_OK = 0;
export const EXIT_FINDINGS = 1;
export const EXIT_BAD_INPUT = 2;
/** No GPU can be read (no driver, NVML or nvidia-smi): nvidia-smi's own code for a missing driver. */
export const EXIT_NO_GPU = 9;
