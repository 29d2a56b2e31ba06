// A column value in a raw statement's fragment: either a bound parameter (a constant of the request) or an SQL
// expression over the rows the fragment reads from (a CTE's column, say).
import { Prisma } from '../db.ts';

export type SqlValue = string | null | Prisma.Sql;

/** The value as SQL text: an expression as it is, a constant as a typed parameter. */
export const sqlText = (value: SqlValue): Prisma.Sql =>
  value instanceof Prisma.Sql ? value : Prisma.sql`${value}::text`;

/** A JSON document as SQL jsonb: an expression as it is, an object as a parameter. */
export const sqlJson = (value: Record<string, unknown> | Prisma.Sql): Prisma.Sql =>
  value instanceof Prisma.Sql ? value : Prisma.sql`${JSON.stringify(value)}::jsonb`;

/** A time as an SQL timestamp(3) parameter (the columns' type: UTC without a zone). */
export const sqlTimestamp = (date: Date): Prisma.Sql => Prisma.sql`${date}::timestamp(3)`;
