-- Public clients (RFC 6749 2.1, docs/architecture.md#apps-without-secrets): a client registered with
-- token_endpoint_auth_method "none" keeps no secret. Expand only: the running release reads secret_hash as before
-- and never meets a public client until the new one registers one. The constraint keeps the two columns in step.
ALTER TABLE "oauth_clients" ADD COLUMN "token_endpoint_auth_method" TEXT NOT NULL DEFAULT 'client_secret_post',
ALTER COLUMN "secret_hash" DROP NOT NULL;
ALTER TABLE "oauth_clients" ADD CONSTRAINT "oauth_clients_public_has_no_secret"
  CHECK ((token_endpoint_auth_method = 'none' AND secret_hash IS NULL)
      OR (token_endpoint_auth_method = 'client_secret_post' AND secret_hash IS NOT NULL));
