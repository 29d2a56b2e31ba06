// Failures of the signing keys (docs/architecture.md#identity-sessions-and-tokens).

/** The stored keys were encrypted under another SECRET_KEY: nothing can be signed until the right one is given. */
export class SecretKeyMismatchError extends Error {
  constructor(kid: string) {
    super(
      `SECRET_KEY does not decrypt the signing key ${kid} stored in the database: start with the SECRET_KEY (or DATA_DIR/secret.key) this database was first started with`,
    );
  }
}
