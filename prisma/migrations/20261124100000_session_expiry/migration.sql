-- session.expired (event list A) is announced by the worker once per session (expire_sessions). Sessions that
-- ended before this migration are marked as announced, so that the first run does not announce the past.
ALTER TABLE "sessions" ADD COLUMN     "expiry_announced_at" TIMESTAMP(3);

UPDATE "sessions" SET "expiry_announced_at" = "expires_at"
WHERE "expires_at" <= (now() AT TIME ZONE 'UTC') OR "revoked_at" IS NOT NULL;

-- The sweep's index holds only the sessions not yet announced, so it does not walk the week of ended sessions
-- that the cleanup keeps.
CREATE INDEX "sessions_unannounced_expiry_idx" ON "sessions"("expires_at") WHERE "expiry_announced_at" IS NULL;
