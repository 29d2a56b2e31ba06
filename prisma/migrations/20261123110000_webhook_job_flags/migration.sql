-- Webhook jobs leave the named queues (issue 9, throughput): a named queue runs one job at a time and is slow to
-- fetch from, so four lanes per webhook capped one webhook at four attempts in flight. Each job now carries the
-- flag webhook:<id> instead, and a worker stops fetching a webhook's jobs while that webhook has its share of the
-- worker's slots in flight (worker/in-flight.ts): a hanging receiver still holds at most that share, never everyone's.
CREATE OR REPLACE FUNCTION tessera_webhook_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  specs graphile_worker.job_spec[];
BEGIN
  WITH created AS (
    INSERT INTO webhook_deliveries (id, webhook_id, event_id, kind, next_attempt_at, created_at, updated_at)
    SELECT tessera_uuid_v7(), w.id, e.id, e.kind, e.created_at, e.created_at, e.created_at
    FROM new_events e
    JOIN webhooks w ON w.organization_id = e.organization_id AND w.is_active
     AND (CASE WHEN e.webhook_id IS NULL THEN e.kind = ANY (w.events) ELSE w.id = e.webhook_id END)
    RETURNING id, webhook_id
  )
  SELECT array_agg(ROW(
    'webhook_deliver', json_build_object('deliveryId', id, 'attempt', 1), NULL,
    NULL, NULL, 'webhook_delivery:' || id, NULL, ARRAY['webhook:' || webhook_id])::graphile_worker.job_spec)
  INTO specs FROM created;
  IF specs IS NOT NULL THEN
    PERFORM graphile_worker.add_jobs(specs);
  END IF;
  RETURN NULL;
END $$;

-- The lanes are gone; jobs already queued in one keep their queue_name, which needs no function.
DROP FUNCTION tessera_webhook_lane(text, text);
