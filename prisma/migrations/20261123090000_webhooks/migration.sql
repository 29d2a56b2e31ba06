-- Webhooks (issue 9): the outbox keeps each event's exact JSON text, and every insert into it fans out, in the same
-- transaction, to a delivery row and a graphile-worker job per subscribed active webhook of the organization. A
-- trigger does the fan-out so that every writer of events (emitEvent, and the one-statement OAuth hot paths that
-- insert their event inside a CTE) gets it without knowing about webhooks. graphile-worker's own schema is installed
-- by prisma/migrate.ts before these files run, so any process (ROLE=api too) can enqueue.

-- A time-ordered id (UUIDv7, RFC 9562) made in SQL: lists page by id, so delivery ids must sort by creation time.
CREATE FUNCTION tessera_uuid_v7() RETURNS text LANGUAGE sql VOLATILE AS $$
  SELECT encode(
    set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
      PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1),
    'hex')::uuid::text
$$;

-- The body is the exact text sent to receivers (the same bytes on every attempt); payload is the same envelope
-- as JSONB, for queries. A writer gives one of them: emitEvent the body; the SQL hot paths a JSONB payload
-- {organization, data}, from which the envelope text is made once, here.
ALTER TABLE "events" ADD COLUMN "body" TEXT;
-- A test event goes to this one webhook only.
ALTER TABLE "events" ADD COLUMN "webhook_id" TEXT;
ALTER TABLE "events" ALTER COLUMN "payload" DROP NOT NULL;

CREATE FUNCTION tessera_event_body() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.body IS NULL THEN
    NEW.body := jsonb_build_object(
      'id', NEW.id,
      'event', NEW.kind,
      'timestamp', to_char(NEW.created_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'organization', NEW.payload -> 'organization',
      'data', coalesce(NEW.payload -> 'data', '{}'::jsonb))::text;
  END IF;
  NEW.payload := NEW.body::jsonb;
  RETURN NEW;
END $$;

CREATE TRIGGER "events_body" BEFORE INSERT ON "events" FOR EACH ROW EXECUTE FUNCTION tessera_event_body();
-- Existing rows get their envelope text once, the same way.
UPDATE "events" SET "body" = jsonb_build_object(
  'id', "id", 'event', "kind", 'timestamp', to_char("created_at", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
  'organization', "payload" -> 'organization', 'data', coalesce("payload" -> 'data', '{}'::jsonb))::text;
UPDATE "events" SET "payload" = "body"::jsonb;
ALTER TABLE "events" ALTER COLUMN "body" SET NOT NULL;
ALTER TABLE "events" ALTER COLUMN "payload" SET NOT NULL;

CREATE TABLE "webhooks" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "events" TEXT[] NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    -- The signing secret, encrypted under SECRET_KEY (JWE dir + A256GCM).
    "secret_encrypted" TEXT NOT NULL,
    "is_active" BOOLEAN NOT NULL DEFAULT true,
    -- Set when all five attempts of a delivery failed; cleared by the next success.
    "failing_since" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,
    CONSTRAINT "webhooks_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "webhooks_organization_id_idx" ON "webhooks"("organization_id");
ALTER TABLE "webhooks" ADD CONSTRAINT "webhooks_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "webhook_deliveries" (
    "id" TEXT NOT NULL,
    "webhook_id" TEXT NOT NULL,
    "event_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    -- pending, delivered or failed
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMP(3),
    "last_status_code" INTEGER,
    "delivered_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "webhook_deliveries_status_check" CHECK ("status" IN ('pending', 'delivered', 'failed'))
);
CREATE INDEX "webhook_deliveries_webhook_id_id_idx" ON "webhook_deliveries"("webhook_id", "id");
CREATE INDEX "webhook_deliveries_event_id_idx" ON "webhook_deliveries"("event_id");
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries"("next_attempt_at") WHERE "status" = 'pending';
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_event_id_fkey" FOREIGN KEY ("event_id") REFERENCES "events"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "webhook_attempts" (
    "id" TEXT NOT NULL,
    "delivery_id" TEXT NOT NULL,
    "attempt" INTEGER NOT NULL,
    "started_at" TIMESTAMP(3) NOT NULL,
    "duration_ms" INTEGER NOT NULL,
    "success" BOOLEAN NOT NULL,
    "status_code" INTEGER,
    -- Why no status: a refused address, a time-out, a network error.
    "error" TEXT,
    "request_headers" JSONB NOT NULL,
    "response_headers" JSONB,
    -- The start of the response body (4 KB at most).
    "response_body" TEXT,
    CONSTRAINT "webhook_attempts_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "webhook_attempts_delivery_id_attempt_idx" ON "webhook_attempts"("delivery_id", "attempt");
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_delivery_id_fkey" FOREIGN KEY ("delivery_id") REFERENCES "webhook_deliveries"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE FUNCTION tessera_webhook_lane(webhook_id text, delivery_id text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT 'webhook:' || webhook_id || ':' || (hashtext(delivery_id) & 3)::text
$$;

-- The fan-out: one INSERT ... SELECT for the deliveries of every event of the statement, then one add_jobs call
-- for all of them. Each delivery's job has a key (so the sweep can move it) and runs in one of four lanes of its
-- webhook: a receiver that hangs holds at most four worker slots, never everyone's.
CREATE FUNCTION tessera_webhook_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
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
    'webhook_deliver', json_build_object('deliveryId', id, 'attempt', 1), tessera_webhook_lane(webhook_id, id),
    NULL, NULL, 'webhook_delivery:' || id, NULL, NULL)::graphile_worker.job_spec)
  INTO specs FROM created;
  IF specs IS NOT NULL THEN
    PERFORM graphile_worker.add_jobs(specs);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "events_webhook_fan_out" AFTER INSERT ON "events"
  REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION tessera_webhook_fan_out();
