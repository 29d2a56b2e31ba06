-- The webhook delivery job has one definition, tessera_webhook_delivery_job (docs/architecture.md#jobs): the task
-- webhook_deliver, the payload {deliveryId, attempt}, the key webhook_delivery:<delivery id> (so the sweep can move
-- it) and the flag webhook:<webhook id> (the per-webhook cap, worker/in-flight.ts), in no named queue. The fan-out
-- trigger and the service that queues every later attempt (schema/modules/webhooks/delivery.service.ts) each wrote
-- it out; both take it from here now. It gives the job's spec, not the job, so the trigger still queues all the
-- deliveries of an event with one add_jobs call; a plain SQL expression, which the planner inlines where it is
-- called. The jobs queued are the same as before.
CREATE FUNCTION tessera_webhook_delivery_job(delivery_id text, webhook_id text, attempt int, run_at timestamptz)
RETURNS graphile_worker.job_spec LANGUAGE sql STABLE AS $$
  SELECT ROW('webhook_deliver', json_build_object('deliveryId', delivery_id, 'attempt', attempt), NULL, run_at, NULL,
    'webhook_delivery:' || delivery_id, NULL, ARRAY['webhook:' || webhook_id])::graphile_worker.job_spec
$$;

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
