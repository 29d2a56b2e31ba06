-- The marketplace (issue 10): apps registered by platform admins, their installations in organizations (each with the
-- OAuth client made for it), and the notices sent to apps through the worker (app.uninstalled).

CREATE TABLE "apps" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "webhook_url" TEXT NOT NULL,
    "redirect_uris" TEXT[],
    "scopes" TEXT[],
    "homepage_url" TEXT,
    -- The signing secret, encrypted under SECRET_KEY (JWE dir + A256GCM), as webhook secrets are.
    "signing_secret_encrypted" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,
    CONSTRAINT "apps_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "installations" (
    "id" TEXT NOT NULL,
    "app_id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "oauth_client_id" TEXT NOT NULL,
    -- pending while the credentials are pushed (the client is disabled then), active once the app took them.
    "status" TEXT NOT NULL DEFAULT 'pending',
    "installed_by_id" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "activated_at" TIMESTAMP(3),
    CONSTRAINT "installations_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "installations_status_check" CHECK ("status" IN ('pending', 'active'))
);
CREATE UNIQUE INDEX "installations_oauth_client_id_key" ON "installations"("oauth_client_id");
CREATE INDEX "installations_organization_id_idx" ON "installations"("organization_id");
CREATE INDEX "installations_status_created_at_idx" ON "installations"("status", "created_at");
-- Installing twice is refused by this index, pending rows included (two concurrent installs: one wins).
CREATE UNIQUE INDEX "installations_app_id_organization_id_key" ON "installations"("app_id", "organization_id");
-- An app is not deleted while installed anywhere (RESTRICT); the client's deletion takes its installation along.
ALTER TABLE "installations" ADD CONSTRAINT "installations_app_id_fkey" FOREIGN KEY ("app_id") REFERENCES "apps"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "installations" ADD CONSTRAINT "installations_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "installations" ADD CONSTRAINT "installations_oauth_client_id_fkey" FOREIGN KEY ("oauth_client_id") REFERENCES "oauth_clients"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "app_notifications" (
    "id" TEXT NOT NULL,
    "app_id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    -- The exact text sent, the same bytes on every attempt.
    "body" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMP(3),
    "last_status_code" INTEGER,
    "last_error" TEXT,
    "delivered_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "app_notifications_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "app_notifications_status_check" CHECK ("status" IN ('pending', 'delivered', 'failed'))
);
CREATE INDEX "app_notifications_app_id_idx" ON "app_notifications"("app_id");
CREATE INDEX "app_notifications_due_idx" ON "app_notifications"("next_attempt_at") WHERE "status" = 'pending';
ALTER TABLE "app_notifications" ADD CONSTRAINT "app_notifications_app_id_fkey" FOREIGN KEY ("app_id") REFERENCES "apps"("id") ON DELETE CASCADE ON UPDATE CASCADE;
