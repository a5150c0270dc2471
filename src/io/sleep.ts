/** A promise that resolves after `ms` milliseconds (shell: a timer): the retry and poll loops' wait. */
export const sleep = (ms: number) => new Promise<void>((ok) => setTimeout(ok, ms));
