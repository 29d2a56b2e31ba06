-- The one way a mail is queued (docs/architecture.md#mail): the row and its send job (task mail_send, key
-- mail:<id>, retried with graphile-worker's exponential back-off up to 12 attempts, about 16 hours), written by the
-- statement of the change that causes the mail, so that a rolled-back change mails nothing and a committed one is
-- sent even across a crash.
CREATE OR REPLACE FUNCTION tessera_queue_mail(mail_id text, kind text, to_address text, subject text, text_body text, html_body text, at timestamp)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO mails (id, kind, to_address, subject, text_body, html_body, created_at, updated_at)
  VALUES (mail_id, kind, to_address, subject, text_body, html_body, at, at);
  PERFORM graphile_worker.add_job('mail_send', json_build_object('mailId', mail_id), job_key := 'mail:' || mail_id, max_attempts := 12);
END $$;
