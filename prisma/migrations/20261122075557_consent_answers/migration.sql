-- CreateTable
CREATE TABLE "oauth_consent_answers" (
    "jti" TEXT NOT NULL,
    "expires_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "oauth_consent_answers_pkey" PRIMARY KEY ("jti")
);
