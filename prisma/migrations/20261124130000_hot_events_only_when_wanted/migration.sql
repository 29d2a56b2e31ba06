-- Which webhooks receive an event is now one rule, tessera_webhooks_wanting: the active webhooks of its
-- organization subscribed to its kind, or for a test event its one webhook. The fan-out trigger delivers to
-- them, and the hot paths' event CTE (schema/events/event-sql.ts) stores its event only when there is one: an
-- event that no webhook receives was a row written on every authorize and token request, never read and never
-- deleted. A plain SQL set-returning function, so that the planner inlines it in both (an index probe on the
-- organization's webhooks). The fan_out column it replaces goes, and the trigger runs for every stored event.
DROP TRIGGER "events_webhook_fan_out" ON "events";
DROP FUNCTION tessera_webhook_fan_out();

-- AlterTable
ALTER TABLE "events" DROP COLUMN "fan_out";

CREATE FUNCTION tessera_webhooks_wanting(organization_id text, kind text, test_webhook_id text)
RETURNS SETOF text LANGUAGE sql STABLE AS $$
  SELECT w.id FROM webhooks w
  WHERE w.organization_id = $1 AND w.is_active
    AND (CASE WHEN $3 IS NULL THEN $2 = ANY (w.events) ELSE w.id = $3 END)
$$;

CREATE FUNCTION tessera_webhook_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  specs graphile_worker.job_spec[];
BEGIN
  WITH created AS (
    INSERT INTO webhook_deliveries (id, webhook_id, event_id, kind, next_attempt_at, created_at, updated_at)
    SELECT tessera_uuid_v7(), w.id, NEW.id, NEW.kind, NEW.created_at, NEW.created_at, NEW.created_at
    FROM tessera_webhooks_wanting(NEW.organization_id, NEW.kind, NEW.webhook_id) AS w(id)
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
  FOR EACH ROW EXECUTE FUNCTION tessera_webhook_fan_out();
