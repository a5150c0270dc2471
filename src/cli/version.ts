/**
 * The exit statuses every command shares, apart from the dispatcher (cli/main.ts), so a command module never
 * imports the module that lazily imports it (no cycle). The version itself is util/version.ts.
 */
export const EXIT_OK = 0;
export const EXIT_FINDINGS = 1;
export const EXIT_BAD_INPUT = 2;
/** No GPU can be read (no driver, NVML or nvidia-smi): nvidia-smi's own code for a missing driver. */
export const EXIT_NO_GPU = 9;
