/**
 * The value, where the code around it guarantees one: a statement that always returns a row, a regex group that
 * always takes part in the match, a key read from the map it was listed from. A broken guarantee then fails here,
 * naming what was missing, instead of as an undefined further on.
 */
export function expected<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw new Error(`expected ${what}`);
  return value;
}
