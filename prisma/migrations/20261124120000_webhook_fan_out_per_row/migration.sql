-- The fan-out ran on every statement that wrote an event, as a statement trigger with a transition table, even
-- for an organization without a webhook: 55-80 µs of PostgreSQL's time per authorize and per code exchange on
-- this project's machines, for nothing in the common case. It now runs per row, and only for rows with fan_out:
-- a writer that checked the organization's active webhooks in its own statement (the hot paths' event CTE,
-- schema/events/event-sql.ts) writes false when there is none, and the trigger's WHEN skips the row without
-- calling the function. Every other writer leaves the default, true, and the function finds what to deliver,
-- as before.
ALTER TABLE "events" ADD COLUMN     "fan_out" BOOLEAN NOT NULL DEFAULT true;

DROP TRIGGER "events_webhook_fan_out" ON "events";
DROP FUNCTION tessera_webhook_fan_out();

CREATE FUNCTION tessera_webhook_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  specs graphile_worker.job_spec[];
BEGIN
  WITH created AS (
    INSERT INTO webhook_deliveries (id, webhook_id, event_id, kind, next_attempt_at, created_at, updated_at)
    SELECT tessera_uuid_v7(), w.id, NEW.id, NEW.kind, NEW.created_at, NEW.created_at, NEW.created_at
    FROM webhooks w
    WHERE w.organization_id = NEW.organization_id AND w.is_active
      AND (CASE WHEN NEW.webhook_id IS NULL THEN NEW.kind = ANY (w.events) ELSE w.id = NEW.webhook_id END)
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

CREATE TRIGGER "events_webhook_fan_out" AFTER INSERT ON "events"
  FOR EACH ROW WHEN (NEW.fan_out) EXECUTE FUNCTION tessera_webhook_fan_out();
