-- without a transaction
-- Built CONCURRENTLY: on a trail of millions of entries a plain CREATE INDEX would hold off every write to the
-- table (each authorize and token writes one) for minutes, and the running release must keep answering while the
-- next one migrates (docs/architecture.md#writing-migrations). The new indexes are made before the old ones go, so
-- the lists always have one. Each statement is its own: IF NOT EXISTS and IF EXISTS let a run that stopped halfway
-- be run again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "memberships_organization_id_id_idx" ON "memberships"("organization_id", "id") INCLUDE ("user_id", "role", "created_at");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "audit_logs_organization_id_id_idx" ON "audit_logs"("organization_id", "id");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "audit_logs_organization_id_action_id_idx" ON "audit_logs"("organization_id", "action", "id");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "audit_logs_actor_id_id_idx" ON "audit_logs"("actor_id", "id");
CREATE INDEX CONCURRENTLY IF NOT EXISTS "audit_logs_action_id_idx" ON "audit_logs"("action", "id");
DROP INDEX CONCURRENTLY IF EXISTS "memberships_organization_id_idx";
DROP INDEX CONCURRENTLY IF EXISTS "audit_logs_organization_id_created_at_idx";
DROP INDEX CONCURRENTLY IF EXISTS "audit_logs_action_created_at_idx";
