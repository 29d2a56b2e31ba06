-- Retry now (docs/architecture.md#events-webhooks-and-the-outbox): an admin may have a delivery tried again at once
-- while later attempts are still scheduled. The delivery's job (webhook_delivery:<id>) is moved to now, and
-- `retry_requested_at` says that the attempt it makes is a manual one: an attempt outside the schedule, after which
-- the next scheduled attempt keeps its time and its place. Every attempt still takes the next number (`attempts`), so
-- the step that records an attempt keeps matching only the state it started in. `manual` marks such attempts in
-- the log; the schedule's place of an attempt is its number less the manual ones before it.
ALTER TABLE "webhook_deliveries" ADD COLUMN "retry_requested_at" TIMESTAMP(3);
ALTER TABLE "webhook_attempts" ADD COLUMN "manual" BOOLEAN NOT NULL DEFAULT false;
