/** A problem with what the user gave: reported as one line `PATH: problem`, exit 2. */
export class InputError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path}: ${problem}`);
    this.name = 'InputError';
  }
}
