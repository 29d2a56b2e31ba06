// JSON text written by SQL exactly as JSON.stringify writes it (key order kept, no spaces), for documents whose
// leaves are partly known only inside a statement (an SQL expression over the rows it reads). jsonb would reorder
// the keys and add spaces: receivers must get the same bytes whichever path wrote the event.
import { Prisma } from '../db.ts';

/** A value, or an SQL expression where a leaf is read in the statement. */
export type SqlLeaves<T> = T extends Date
  ? T | Prisma.Sql
  : T extends readonly (infer E)[]
    ? SqlLeaves<E>[] | Prisma.Sql
    : T extends object
      ? { [K in keyof T]: SqlLeaves<T[K]> } | Prisma.Sql
      : T | Prisma.Sql;

type Part = string | Prisma.Sql;

function parts(value: unknown, out: Part[]): void {
  if (value instanceof Prisma.Sql) {
    // to_json escapes strings the way JSON.stringify does (\" \\ \b \f \n \r \t, \u00xx for other controls).
    out.push(Prisma.sql`coalesce(to_json(${value})::text, 'null')`);
  } else if (Array.isArray(value)) {
    out.push('[');
    value.forEach((item, i) => {
      if (i) out.push(',');
      parts(item === undefined ? null : item, out);
    });
    out.push(']');
  } else if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    out.push('{');
    let first = true;
    for (const [key, item] of Object.entries(value)) {
      if (item === undefined) continue;
      out.push(`${first ? '' : ','}${JSON.stringify(key)}:`);
      first = false;
      parts(item, out);
    }
    out.push('}');
  } else {
    out.push(JSON.stringify(value));
  }
}

/** The document as an SQL text expression; a document without SQL leaves is one parameter. */
export function jsonTextSql(value: unknown): Prisma.Sql {
  const raw: Part[] = [];
  parts(value, raw);
  const merged: Part[] = [];
  for (const part of raw) {
    const last = merged[merged.length - 1];
    if (typeof part === 'string' && typeof last === 'string') merged[merged.length - 1] = last + part;
    else merged.push(part);
  }
  return Prisma.join(
    merged.map((p) => (typeof p === 'string' ? Prisma.sql`${p}::text` : p)),
    ' || ',
  );
}
