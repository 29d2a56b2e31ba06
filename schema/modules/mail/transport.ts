// The SMTP side: nodemailer, a connection per mail, with time-outs short enough that a relay that hangs does not
// hold a worker slot for minutes. A mail refused with a 5xx reply is permanent (nodemailer's `permanent`, RFC 5321
// 4.2.1: 503 excepted); a 4xx reply or a network failure is worth another attempt.
import { storable } from '../../push/sender.ts';

export interface MailSettings {
  /** smtp:// or smtps:// with the credentials in the URL; without it mail stays in the development mailbox. */
  smtpUrl?: string;
  /** The From header; `Tessera <no-reply@host of BASE_URL>` when not given. */
  from?: string;
}

export interface OutgoingMail {
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
}

export type SendOutcome = { ok: true; reply: string } | { ok: false; permanent: boolean; error: string };

export interface Mailer {
  send(mail: OutgoingMail): Promise<SendOutcome>;
}

export function smtpMailer(smtpUrl: string): Mailer {
  // nodemailer is loaded with the first mail: the API processes, which send none, never hold it.
  const transport = import('nodemailer').then(({ createTransport }) =>
    createTransport({
      url: smtpUrl,
      connectionTimeout: 15_000,
      greetingTimeout: 15_000,
      socketTimeout: 60_000,
    }),
  );
  return {
    async send(mail) {
      try {
        const info = await (await transport).sendMail(mail);
        return { ok: true, reply: storable(String(info.response ?? ''), 1000) };
      } catch (error) {
        const e = error as Error & { permanent?: boolean; responseCode?: number; code?: string };
        // A relay's reply is text from outside: kept short and storable.
        return {
          ok: false,
          permanent: e.permanent === true,
          error: storable(`${e.code ?? 'error'}${e.responseCode ? ` ${e.responseCode}` : ''}: ${e.message}`, 1000),
        };
      }
    },
  };
}

/** `Tessera <no-reply@id.example.com>` for the issuer https://id.example.com. */
export const defaultSender = (issuer: string) => `Tessera <no-reply@${new URL(issuer).hostname}>`;
