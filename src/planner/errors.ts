/**
 * Errors the pure planner raises for bad input. The CLI shell turns them into one line and exit 2
 * (ConfigError gets the config's path in front; PlanError is printed as is).
 */

/** A model config that the planner cannot read: names the field. */
export class ConfigError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'ConfigError';
  }
}

/** A plan request that cannot be satisfied (unknown GPU, nothing fits, inconsistent batch sizes). */
export class PlanError extends Error {
  override name = 'PlanError';
}
