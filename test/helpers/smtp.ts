// A real SMTP server for the tests (smtp-server), with what arrives parsed by mailparser. `refuse` makes it answer
// the next messages with an SMTP error reply instead (451 temporary, 550 permanent), to test retries.
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { waitFor } from './wait.ts';

export interface ReceivedMail {
  to: string;
  from: string;
  subject: string;
  text: string;
  html: string;
  parsed: ParsedMail;
}

export interface TestSmtp {
  /** SMTP_URL for the service. */
  url: string;
  received: ReceivedMail[];
  /** Messages answered with an error reply so far (the attempts that did not go through). */
  refused: number;
  /** Answers the next `times` messages with `code` and `message` instead of accepting them. */
  refuse(times: number, code: number, message?: string): void;
  /** The mails received for `to` whose subject matches `subject`, once there are at least `count`. */
  waitForMail(to: string, subject?: RegExp, count?: number, ms?: number): Promise<ReceivedMail[]>;
  /** The link in the newest mail to `to` whose path is `path` (such as /reset-password). */
  linkIn(mail: ReceivedMail, path: string): URL;
  close(): Promise<void>;
}

export async function startTestSmtp(): Promise<TestSmtp> {
  const received: ReceivedMail[] = [];
  let refusals: { code: number; message: string }[] = [];
  const state = { refused: 0 };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const refusal = refusals.shift();
      simpleParser(stream)
        .then((parsed) => {
          if (refusal) {
            state.refused++;
            return callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }));
          }
          for (const rcpt of session.envelope.rcptTo) {
            received.push({
              to: rcpt.address.toLowerCase(),
              from: parsed.from?.text ?? '',
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
              html: typeof parsed.html === 'string' ? parsed.html : '',
              parsed,
            });
          }
          callback();
        })
        .catch((error: Error) => callback(error));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    get refused() {
      return state.refused;
    },
    refuse(times, code, message = code >= 500 ? 'Mailbox unavailable' : 'Try again later') {
      refusals = Array.from({ length: times }, () => ({ code, message }));
    },
    waitForMail: (to, subject = /./, count = 1, ms = 20_000) =>
      waitFor(() => {
        const mails = received.filter((m) => m.to === to.toLowerCase() && subject.test(m.subject));
        return mails.length >= count ? mails : undefined;
      }, ms),
    linkIn(mail, path) {
      const link = mail.text
        .match(/https?:\/\/\S+/g)
        ?.map((u) => new URL(u))
        .find((u) => u.pathname === path);
      if (!link) throw new Error(`no ${path} link in the mail "${mail.subject}":\n${mail.text}`);
      return link;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
