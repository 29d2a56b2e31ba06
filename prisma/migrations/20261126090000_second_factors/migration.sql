-- Second factors (docs/architecture.md#second-factors): TOTP with recovery codes, passkeys, the methods a session
-- was signed in with (RFC 8176 amr), and an organization's requirement of a second factor.

-- What each sign-in proved, carried from the session to the codes and refresh tokens it issues, so that an ID
-- token says it (amr, and acr derived from it).
ALTER TABLE "sessions" ADD COLUMN "amr" TEXT[] NOT NULL DEFAULT '{pwd}';
ALTER TABLE "authorization_codes" ADD COLUMN "amr" TEXT[] NOT NULL DEFAULT '{}';
ALTER TABLE "refresh_tokens" ADD COLUMN "amr" TEXT[] NOT NULL DEFAULT '{}';

ALTER TABLE "organizations" ADD COLUMN "require_mfa" BOOLEAN NOT NULL DEFAULT false;

-- One TOTP factor per person (RFC 6238). The secret is encrypted with SECRET_KEY. It is pending until a code
-- confirms it. `last_used_step` is the time step of the last code accepted: a code is accepted once only.
CREATE TABLE "totp_factors" (
    "user_id" TEXT NOT NULL,
    "secret_encrypted" TEXT NOT NULL,
    "confirmed_at" TIMESTAMP(3),
    "last_used_step" BIGINT NOT NULL DEFAULT 0,
    "created_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "totp_factors_pkey" PRIMARY KEY ("user_id")
);
ALTER TABLE "totp_factors" ADD CONSTRAINT "totp_factors_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Ten single-use recovery codes per person, 80 random bits each, stored as SHA-256. A new set replaces the old.
CREATE TABLE "recovery_codes" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "code_hash" TEXT NOT NULL,
    "used_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "recovery_codes_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "recovery_codes_user_id_code_hash_key" ON "recovery_codes"("user_id", "code_hash");
ALTER TABLE "recovery_codes" ADD CONSTRAINT "recovery_codes_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- WebAuthn credentials. `credential_id` is base64url, as the browser sends it; `counter` follows the library's
-- guidance (a signature counter that does not grow is refused as a possible clone).
CREATE TABLE "passkeys" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "credential_id" TEXT NOT NULL,
    "public_key" BYTEA NOT NULL,
    "counter" BIGINT NOT NULL DEFAULT 0,
    "transports" TEXT[] NOT NULL DEFAULT '{}',
    -- singleDevice or multiDevice (synced): an ID token says hwk for the first, swk for the second
    "device_type" TEXT NOT NULL,
    "backed_up" BOOLEAN NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL,
    "last_used_at" TIMESTAMP(3),

    CONSTRAINT "passkeys_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "passkeys_credential_id_key" ON "passkeys"("credential_id");
CREATE INDEX "passkeys_user_id_idx" ON "passkeys"("user_id");
ALTER TABLE "passkeys" ADD CONSTRAINT "passkeys_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A WebAuthn challenge, single use and short-lived. `user_id` is null for a sign-in with a discoverable passkey
-- (the person is not known until the answer).
CREATE TABLE "webauthn_challenges" (
    "id" TEXT NOT NULL,
    "challenge" TEXT NOT NULL,
    "user_id" TEXT,
    -- registration or authentication
    "purpose" TEXT NOT NULL,
    "expires_at" TIMESTAMP(3) NOT NULL,
    "used_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "webauthn_challenges_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "webauthn_challenges_challenge_key" ON "webauthn_challenges"("challenge");
CREATE INDEX "webauthn_challenges_expires_at_idx" ON "webauthn_challenges"("expires_at");
ALTER TABLE "webauthn_challenges" ADD CONSTRAINT "webauthn_challenges_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;
