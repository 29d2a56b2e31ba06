-- without a transaction
-- The cleanup's indexes (docs/architecture.md#bounded-storage), built CONCURRENTLY outside a transaction: inside one,
-- each build held writes to its table until the last ended, and a code issued meanwhile (one statement that writes
-- several of these tables) deadlocked with the migration: test/e2e/upgrade.test.ts saw the previous release answer
-- 500. Changed after it was first released; a database that applied it keeps its indexes (the same ones).
CREATE INDEX CONCURRENTLY IF NOT EXISTS "sessions_expires_at_idx" ON "sessions"("expires_at");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "audit_logs_created_at_idx" ON "audit_logs"("created_at");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "login_throttles_window_start_idx" ON "login_throttles"("window_start");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "events_created_at_idx" ON "events"("created_at");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "authorization_codes_expires_at_idx" ON "authorization_codes"("expires_at");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "refresh_tokens_expires_at_idx" ON "refresh_tokens"("expires_at");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "oauth_consent_answers_expires_at_idx" ON "oauth_consent_answers"("expires_at");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "webhook_deliveries_created_at_idx" ON "webhook_deliveries"("created_at");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "mails_created_at_idx" ON "mails"("created_at");
