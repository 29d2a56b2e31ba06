-- Which webhooks receive an event, the one rule: the active webhooks of its organization subscribed to its kind,
-- or for a test event its one webhook. The fan-out trigger delivers to them, and the hot paths' event CTE
-- (schema/events/event-sql.ts) stores an event only when there is one. A plain SQL set-returning function, so that
-- the planner inlines it in both (an index probe on the organization's webhooks).
CREATE OR REPLACE FUNCTION tessera_webhooks_wanting(organization_id text, kind text, test_webhook_id text)
RETURNS SETOF text LANGUAGE sql STABLE AS $$
  SELECT w.id FROM webhooks w
  WHERE w.organization_id = $1 AND w.is_active
    AND (CASE WHEN $3 IS NULL THEN $2 = ANY (w.events) ELSE w.id = $3 END)
$$;
