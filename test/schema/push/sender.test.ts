// The webhook sender's connections to a receiver: reused between deliveries, but never kept past a second before
// the time the receiver says it keeps them idle (Keep-Alive: timeout=N), nor past four seconds whatever it says.
// A delivery sent on a connection just as the receiver closed it failed with "socket hang up".
import https from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send } from '../../../schema/push/sender.ts';
import { makeTestCa, type TestCa } from '../../helpers/https-receiver.ts';
import { waitFor } from '../../helpers/wait.ts';

let ca: TestCa;
const servers: https.Server[] = [];
beforeAll(() => {
  ca = makeTestCa();
});
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  ca.remove();
});

/**
 * A receiver that never closes an idle connection itself (so any close is the sender's), announces `hint` as its
 * Keep-Alive header (or none), and answers 200 after `delayMs`. Counts its connections and those closed.
 */
async function startReceiver(hint: string | null, delayMs = 0) {
  const connections = { opened: 0, closed: 0 };
  const server = https.createServer({ key: ca.key, cert: ca.cert, keepAliveTimeout: 0 }, (req, res) => {
    req.resume();
    req.on('end', () =>
      setTimeout(() => {
        if (hint) res.setHeader('keep-alive', hint);
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      }, delayMs),
    );
  });
  server.on('secureConnection', (socket) => {
    connections.opened += 1;
    socket.on('close', () => (connections.closed += 1));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const deliver = () =>
    send(
      { url: new URL(`https://receiver.test:${port}/hooks`), address: { address: '127.0.0.1', family: 4 } },
      { 'content-type': 'application/json' },
      '{"ping":true}',
      { timeoutMs: 10_000, ca: ca.caPem },
    );
  return { connections, deliver };
}

describe.concurrent("the webhook sender's connections", () => {
  it('reuses a connection for the next delivery', async () => {
    const receiver = await startReceiver(null);
    expect((await receiver.deliver()).statusCode).toBe(200);
    expect((await receiver.deliver()).statusCode).toBe(200);
    expect(receiver.connections).toEqual({ opened: 1, closed: 0 });
  });

  it('closes an idle connection a second before the time the receiver announced, and the next delivery opens a new one', async () => {
    const receiver = await startReceiver('timeout=2');
    expect((await receiver.deliver()).statusCode).toBe(200);
    const idle = performance.now();
    await waitFor(() => (receiver.connections.closed === 1 ? true : undefined));
    // About one second; well before the four seconds of a receiver that announces nothing (the next test).
    expect(performance.now() - idle).toBeLessThan(3_000);
    const next = await receiver.deliver();
    expect(next).toMatchObject({ statusCode: 200, error: null });
    expect(receiver.connections.opened).toBe(2);
  });

  it('closes an idle connection after four seconds when the receiver announces nothing', async () => {
    const receiver = await startReceiver(null);
    const sent = performance.now();
    expect((await receiver.deliver()).statusCode).toBe(200);
    await waitFor(() => (receiver.connections.closed === 1 ? true : undefined));
    expect(performance.now() - sent).toBeGreaterThanOrEqual(3_900);
  });

  it('waits for an answer slower than the idle time-out: only an idle connection is closed', async () => {
    const receiver = await startReceiver(null, 4_500);
    const result = await receiver.deliver();
    expect(result).toMatchObject({ statusCode: 200, body: 'ok', error: null });
    expect(result.durationMs).toBeGreaterThanOrEqual(4_500);
  });
});
