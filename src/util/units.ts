/** Binary units of bytes, defined once (pure). */
export const MiB = 1024 ** 2;
export const GiB = 1024 ** 3;
