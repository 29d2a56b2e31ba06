-- The outbox's fan-out (docs/architecture.md#events-webhooks-and-the-outbox): every event stored writes, in the
-- same transaction, a delivery row and a graphile-worker job for each webhook that wants it. A trigger does it so
-- that every writer of events (emitEvent, and the one-statement OAuth hot paths that insert their event inside a
-- CTE) gets it without knowing about webhooks. All the deliveries of an event go to graphile-worker in one add_jobs
-- call.
CREATE OR REPLACE FUNCTION tessera_webhook_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  specs graphile_worker.job_spec[];
BEGIN
  WITH created AS (
    INSERT INTO webhook_deliveries (id, webhook_id, event_id, kind, next_attempt_at, created_at, updated_at)
    SELECT tessera_uuid_v7(), w.id, NEW.id, NEW.kind, NEW.created_at, NEW.created_at, NEW.created_at
    FROM tessera_webhooks_wanting(NEW.organization_id, NEW.kind, NEW.webhook_id) AS w(id)
    RETURNING id, webhook_id
  )
  SELECT array_agg(tessera_webhook_delivery_job(id, webhook_id, 1, NULL)) INTO specs FROM created;
  IF specs IS NOT NULL THEN
    PERFORM graphile_worker.add_jobs(specs);
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER "events_webhook_fan_out" AFTER INSERT ON "events"
  FOR EACH ROW EXECUTE FUNCTION tessera_webhook_fan_out();
