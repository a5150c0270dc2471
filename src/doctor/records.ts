/**
 * The probe's records now live in run/records.ts (the run model doctor and tune share); kept as a re-export for the
 * collector (cli/probeRun.ts), which imports them from here.
 */
export * from '../run/records.js';
