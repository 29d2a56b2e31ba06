// A start-up failure fixed outside Tessera (the machine, the database): its message is one line that says what to
// change, and server/main.ts prints it with no stack trace (docs/architecture.md#configuration-and-processes).
// Thrown by the embedded PostgreSQL and the migration runner; it lives here so that prisma/ imports nothing above it.
export class StartupError extends Error {}
