-- Room on each page for the update that uses a code or a refresh token up (used_at), so that the new version of the
-- row stays on its page and no index gets a new entry (a HOT update): with full pages, each redemption wrote one
-- entry more into every index of the table (docs/architecture.md#hot-paths). Rows are written once and updated
-- once, within minutes (codes) or an hour (refresh tokens); the space a page keeps back is reused as old versions
-- are pruned. Sessions are touched at most once a minute (last_seen_at) and read on every request.
ALTER TABLE "refresh_tokens" SET (fillfactor = 70);
ALTER TABLE "authorization_codes" SET (fillfactor = 70);
ALTER TABLE "sessions" SET (fillfactor = 85);
