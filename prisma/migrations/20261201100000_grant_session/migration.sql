-- A grant records the session that authorized it, so that ending the session ends the grant: its refresh tokens at
-- once, its access tokens at their next use (docs/architecture.md#identity-sessions-and-tokens). Null for
-- client_credentials grants and for the grants made before this column. The index serves the statement that ends a
-- session's grants, and the foreign key's SET NULL when the cleanup deletes a long-expired session (the grant, with
-- its offline refresh tokens, outlives the row).
ALTER TABLE "oauth_grants" ADD COLUMN "session_id" TEXT;

CREATE INDEX "oauth_grants_session_id_idx" ON "oauth_grants"("session_id");

ALTER TABLE "oauth_grants" ADD CONSTRAINT "oauth_grants_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE SET NULL ON UPDATE CASCADE;
