-- The connection whose sign-in made a session: a recent sign-in through the person's identity provider is the fresh
-- proof of an account that has no password of its own (docs/architecture.md#second-factors).
ALTER TABLE "sessions" ADD COLUMN "connection_id" TEXT;
