// `npm start`: run Tessera until SIGTERM or SIGINT, then shut down gracefully.
import { ConfigError } from './config.ts';
import { startTessera } from './start.ts';

try {
  const running = await startTessera();
  let signals = 0;
  const shutdown = async (signal: string) => {
    if (++signals > 1) process.exit(1);
    running.logger.info(`${signal}: shutting down`);
    await running.stop().catch((err) => running.logger.error({ err }, 'shutdown failed'));
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`tessera: ${error.message}`);
    process.exit(2);
  }
  throw error;
}
