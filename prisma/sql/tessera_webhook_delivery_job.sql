-- The webhook delivery job, its one definition (docs/architecture.md#jobs): the task webhook_deliver, the payload
-- {deliveryId, attempt}, the key webhook_delivery:<delivery id> (so the sweep can move it) and the flag
-- webhook:<webhook id> (the per-webhook cap, worker/in-flight.ts), in no named queue. The fan-out trigger and the
-- service that queues every later attempt (schema/modules/webhooks/delivery.service.ts) both take it from here. It
-- gives the job's spec, not the job, so that the trigger queues all the deliveries of an event with one add_jobs
-- call; a plain SQL expression, which the planner inlines where it is called.
CREATE OR REPLACE FUNCTION tessera_webhook_delivery_job(delivery_id text, webhook_id text, attempt int, run_at timestamptz)
RETURNS graphile_worker.job_spec LANGUAGE sql STABLE AS $$
  SELECT ROW('webhook_deliver', json_build_object('deliveryId', delivery_id, 'attempt', attempt), NULL, run_at, NULL,
    'webhook_delivery:' || delivery_id, NULL, ARRAY['webhook:' || webhook_id])::graphile_worker.job_spec
$$;
