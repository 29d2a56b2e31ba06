// `npm start`: run Tessera until SIGTERM or SIGINT, then shut down gracefully.
import './process-shape.ts';
import { flushCompileCache } from 'node:module';
import { startTracing } from './tracing.ts';

// Tracing first, and only then the service's modules (dynamic imports, which static ones would run ahead of): the
// pg instrumentation must see node-postgres load (docs/architecture.md#tracing). Without OTEL_EXPORTER_OTLP_ENDPOINT
// this loads nothing.
const tracing = await startTracing();
const [{ StartupError }, { ConfigError }, { startTessera }, { welcomeLines }] = await Promise.all([
  import('../prisma/startup-error.ts'),
  import('./config.ts'),
  import('./start.ts'),
  import('./welcome.ts'),
]);

const starting = startTessera({ tracing });

// Installed before start-up finishes: a signal then waits for the start to complete and stops what it
// started (the embedded PostgreSQL above all), instead of killing the process with its database running.
let signals = 0;
const shutdown = async (signal: string) => {
  if (++signals > 1) process.exit(1);
  const running = await starting.catch(() => undefined);
  if (!running) return; // start-up failed: reported below
  running.logger.info(`${signal}: shutting down`);
  try {
    await running.stop();
  } catch (err) {
    running.logger.error({ err }, 'shutdown failed');
    process.exit(1);
  }
  // The spans of the last requests, sent before the process ends.
  await tracing?.shutdown().catch((err) => running.logger.warn({ err }, 'could not send the last traces'));
  running.logger.info('stopped');
  process.exit(0);
};
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

try {
  const running = await starting;
  // What this start compiled, kept now: a process that is later killed still leaves it for the next (process-shape.ts).
  flushCompileCache();
  if (running.config.role !== 'worker')
    console.error(welcomeLines(running.base.settings.issuer(), running.config).join('\n'));
} catch (error) {
  // Mistakes the operator fixes: one line that says what to change, no stack trace.
  if (error instanceof ConfigError) {
    console.error(`tessera: ${error.message}`);
    process.exit(2);
  }
  if (error instanceof StartupError) {
    console.error(`tessera: ${error.message}`);
    process.exit(1);
  }
  if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
    const { port } = error as { port?: number };
    console.error(`tessera: port ${port} is in use: stop what listens there, or set PORT to a free port`);
    process.exit(1);
  }
  throw error;
}
