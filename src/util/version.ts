/**
 * gpuwise's version (pure): every report's `version` field and `--version`. The exit statuses are the CLI's
 * (cli/version.ts).
 */
declare const __GPUWISE_VERSION__: string | undefined;
/** Set by the bundle (scripts/buildConfig.mjs); `0.0.0-dev` when run from the sources. */
export const VERSION = typeof __GPUWISE_VERSION__ === 'string' ? __GPUWISE_VERSION__ : '0.0.0-dev';
