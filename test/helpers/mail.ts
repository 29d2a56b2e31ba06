// The outbox seen from a test: a mail's row and its mail_send job (key mail:<id>), waited on until the job has
// left graphile-worker's queue, so that what was received can then be counted as final.
import type { Db, Prisma } from '../../schema/db.ts';
import { waitFor } from './wait.ts';

export type MailRow = NonNullable<Awaited<ReturnType<Db['mail']['findFirst']>>>;

/** Send jobs still queued for the mail `mailId`: 1 while it waits for an attempt or a retry, 0 once done. */
export async function mailJobs(db: Db, mailId: string): Promise<number> {
  const [row] = await db.$queryRaw<
    { n: number }[]
  >`select count(*)::int as n from graphile_worker.jobs where key = ${`mail:${mailId}`}`;
  return row!.n;
}

/** Newest first: ids are UUIDv7, in the order they were made. */
const NEWEST: Prisma.MailOrderByWithRelationInput[] = [{ createdAt: 'desc' }, { id: 'desc' }];

/** The newest mail to `to`, once one is there. */
export const waitForMailRow = (db: Db, to: string, ms?: number): Promise<MailRow> =>
  waitFor(async () => (await db.mail.findFirst({ where: { toAddress: to }, orderBy: NEWEST })) ?? undefined, ms);

/**
 * The newest mail to `to` once its row has `status` and its send job is gone (completed, not pending a retry):
 * nothing will try to send it again.
 */
export const waitForSettledMail = (db: Db, to: string, status: string, ms = 20_000): Promise<MailRow> =>
  waitFor(async () => {
    const mail = await db.mail.findFirst({ where: { toAddress: to }, orderBy: NEWEST });
    return mail?.status === status && (await mailJobs(db, mail.id)) === 0 ? mail : undefined;
  }, ms);
