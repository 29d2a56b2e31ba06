// The per-webhook cap on a worker's slots (worker/in-flight.ts) that replaced the named queues: a webhook's jobs are
// not fetched while its running jobs and the fetches under way would pass the cap, and a job past it is put back.
import type { Job, JobHelpers } from 'graphile-worker';
import { describe, expect, it } from 'vitest';
import { InFlight } from '../../worker/in-flight.ts';

const job = (id: string, flag: string) =>
  ({
    id,
    key: `webhook_delivery:${id}`,
    task_identifier: 'webhook_deliver',
    priority: 0,
    flags: { [flag]: true },
  }) as unknown as Job;
const start = (gate: InFlight, j: Job) => gate.events.emit('job:start', { job: j } as never);
const complete = (gate: InFlight, j: Job) => gate.events.emit('job:complete', { job: j, error: undefined } as never);
const empty = (gate: InFlight) => gate.events.emit('worker:getJob:empty', {} as never);

describe('InFlight', () => {
  it('stops fetching a flag once its running jobs and the fetches under way would pass the cap, and resumes as they end', () => {
    const gate = new InFlight(3);
    const [a1, a2, a3] = ['1', '2', '3'].map((id) => job(id, 'webhook:a'));
    expect(gate.forbidden()).toBeNull();
    start(gate, a1!);
    expect(gate.forbidden()).toBeNull(); // 1 running + this fetch
    start(gate, a2!);
    // 2 running: one fetch may still bring a third, a second fetch under way at the same time may not.
    expect(gate.forbidden()).toBeNull();
    expect(gate.forbidden()).toEqual(['webhook:a']);
    empty(gate);
    start(gate, a3!);
    expect(gate.forbidden()).toEqual(['webhook:a']);
    empty(gate);
    complete(gate, a1!);
    expect(gate.forbidden()).toBeNull();
    start(gate, job('b', 'webhook:b'));
    // Another webhook's running job counts only for its own flag.
    expect(gate.forbidden()).toBeNull();
    expect(gate.forbidden()).toEqual(['webhook:a']);
  });

  it('runs a job within the cap and puts one past it back under its key, a moment later, without running it', async () => {
    const gate = new InFlight(1);
    const ran: string[] = [];
    const added: { task: string; payload: unknown; spec: Record<string, unknown> }[] = [];
    const task = gate.capped(async (payload) => void ran.push((payload as { id: string }).id));
    const helpers = (j: Job) =>
      ({
        job: j,
        addJob: async (t: string, payload: unknown, spec: Record<string, unknown>) =>
          void added.push({ task: t, payload, spec }),
      }) as unknown as JobHelpers;
    const [first, second] = [job('1', 'webhook:a'), job('2', 'webhook:a')];
    start(gate, first);
    await task({ id: '1' }, helpers(first));
    start(gate, second); // fetched in the same burst, before the first was seen running
    const before = Date.now();
    await task({ id: '2' }, helpers(second));
    expect(ran).toEqual(['1']);
    expect(added).toHaveLength(1);
    expect(added[0]).toMatchObject({
      task: 'webhook_deliver',
      payload: { id: '2' },
      spec: { jobKey: 'webhook_delivery:2', flags: ['webhook:a'] },
    });
    expect((added[0]!.spec.runAt as Date).getTime()).toBeGreaterThan(before);
  });
});
