/**
 * A small schema checker for JSON that comes from outside (pure): probe records. Each check returns the value (a
 * cleaned copy for objects) or throws a FieldProblem naming the field, so a record is checked once, at the edge, and
 * the code after it trusts its types. Optional fields that are present but malformed are dropped (the record keeps
 * what it can tell); required fields that are missing or malformed reject the record.
 */

export class FieldProblem extends Error {
  constructor(
    readonly field: string,
    readonly expected: string,
  ) {
    super(`${field}: expected ${expected}`);
  }
}

export type Check<T> = (v: unknown, field: string) => T;

const describe = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);

export const num =
  (min = Number.NEGATIVE_INFINITY): Check<number> =>
  (v, f) => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min)
      throw new FieldProblem(f, `a number${min > Number.NEGATIVE_INFINITY ? ` >= ${min}` : ''}, got ${describe(v)}`);
    return v;
  };

export const int =
  (min = Number.NEGATIVE_INFINITY): Check<number> =>
  (v, f) => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min)
      throw new FieldProblem(f, `an integer${min > Number.NEGATIVE_INFINITY ? ` >= ${min}` : ''}, got ${describe(v)}`);
    return v;
  };

export const str: Check<string> = (v, f) => {
  if (typeof v !== 'string') throw new FieldProblem(f, `a string, got ${describe(v)}`);
  return v;
};

export const bool: Check<boolean> = (v, f) => {
  if (typeof v !== 'boolean') throw new FieldProblem(f, `true or false, got ${describe(v)}`);
  return v;
};

export const oneOf =
  <T extends string>(values: readonly T[]): Check<T> =>
  (v, f) => {
    if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) throw new FieldProblem(f, `one of ${values.join(', ')}`);
    return v as T;
  };

export const nullable =
  <T>(c: Check<T>): Check<T | null> =>
  (v, f) =>
    v === null ? null : c(v, f);

export const arrayOf =
  <T>(c: Check<T>): Check<T[]> =>
  (v, f) => {
    if (!Array.isArray(v)) throw new FieldProblem(f, `an array, got ${describe(v)}`);
    return v.map((x, i) => c(x, `${f}[${i}]`));
  };

/** An object of string keys to values of one check (dtype counts). */
export const mapOf =
  <T>(c: Check<T>): Check<Record<string, T>> =>
  (v, f) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new FieldProblem(f, `an object, got ${describe(v)}`);
    const out: Record<string, T> = {};
    for (const [k, x] of Object.entries(v)) out[k] = c(x, `${f}.${k}`);
    return out;
  };

/** Any JSON object, kept as is (a model's Hugging Face config: read field by field by the planner). */
export const anyObject: Check<Record<string, unknown>> = (v, f) => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new FieldProblem(f, `an object, got ${describe(v)}`);
  return v as Record<string, unknown>;
};

/** Marks a field that may be absent; present but malformed, it is dropped and reported in `dropped`. */
export interface Optional<T> {
  optional: Check<T>;
}
export const optional = <T>(c: Check<T>): Optional<T> => ({ optional: c });

type Shape = Record<string, Check<unknown> | Optional<unknown>>;
type Out<S extends Shape> = { [K in keyof S as S[K] extends Optional<unknown> ? never : K]: S[K] extends Check<infer T> ? T : never } & {
  [K in keyof S as S[K] extends Optional<unknown> ? K : never]?: S[K] extends Optional<infer T> ? T : never;
};

/**
 * An object with these fields checked; other fields are kept as they are (a newer probe's additions reach the report
 * untouched, and nothing reads them). `dropped` collects optional fields that were malformed (`field: expected ...`)
 * and removed.
 */
export const obj =
  <S extends Shape>(shape: S, dropped?: string[]): Check<Out<S>> =>
  (v, f) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new FieldProblem(f, `an object, got ${describe(v)}`);
    const src = v as Record<string, unknown>;
    const out: Record<string, unknown> = { ...src };
    for (const [k, c] of Object.entries(shape)) {
      const field = f ? `${f}.${k}` : k;
      if (typeof c === 'function') out[k] = c(src[k], field);
      else if (k in src && src[k] !== undefined) {
        try {
          out[k] = c.optional(src[k], field);
        } catch (e) {
          if (!(e instanceof FieldProblem)) throw e;
          delete out[k];
          dropped?.push(e.message);
        }
      }
    }
    return out as Out<S>;
  };
