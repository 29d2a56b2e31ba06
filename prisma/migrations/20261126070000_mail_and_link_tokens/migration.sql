-- Outgoing mail and the single-use tokens that mails carry in their links (docs/architecture.md#mail).
--
-- A mail is a row written in the transaction of the change that causes it, and its send job is queued by the same
-- statement (tessera_queue_mail): a rolled-back change mails nothing, a committed one is sent even across a crash.
-- The bodies are kept until the mail has gone out over SMTP, then erased: they hold single-use links. Without SMTP
-- they stay, as the development mailbox platform admins read.
CREATE TABLE "mails" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "to_address" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "text_body" TEXT,
    "html_body" TEXT,
    -- queued, retrying, sent, mailbox (kept for the development mailbox), failed
    "status" TEXT NOT NULL DEFAULT 'queued',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "sent_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "mails_pkey" PRIMARY KEY ("id")
);

-- A link token: 256 random bits, stored as SHA-256, single use, expiring. `email` is the address the link was sent
-- to (for an e-mail change, the new one). `ended_at` is set when it is used, or voided by a newer one.
CREATE TABLE "link_tokens" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "purpose" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "expires_at" TIMESTAMP(3) NOT NULL,
    "ended_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "link_tokens_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "link_tokens_token_hash_key" ON "link_tokens"("token_hash");
CREATE INDEX "link_tokens_user_id_purpose_idx" ON "link_tokens"("user_id", "purpose");
CREATE INDEX "link_tokens_expires_at_idx" ON "link_tokens"("expires_at");

ALTER TABLE "link_tokens" ADD CONSTRAINT "link_tokens_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The one way a mail is queued: the row and its send job (task mail_send, key mail:<id>, retried with
-- graphile-worker's exponential back-off up to 12 attempts, about 16 hours).
CREATE FUNCTION tessera_queue_mail(mail_id text, kind text, to_address text, subject text, text_body text, html_body text, at timestamp)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO mails (id, kind, to_address, subject, text_body, html_body, created_at, updated_at)
  VALUES (mail_id, kind, to_address, subject, text_body, html_body, at, at);
  PERFORM graphile_worker.add_job('mail_send', json_build_object('mailId', mail_id), job_key := 'mail:' || mail_id, max_attempts := 12);
END $$;
