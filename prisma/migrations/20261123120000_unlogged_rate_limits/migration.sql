-- Rate-limit counters are written by every request of an organization or API key. They need no crash safety: a
-- crash that empties them only restarts the current windows. Unlogged, their updates write no WAL and their
-- commits wait for no flush.
ALTER TABLE "rate_limit_counters" SET UNLOGGED;
