// Polling for an effect that happens out of band (a job, a log line written as a response ends).

/** Polls `probe` until it returns something other than undefined; throws after `ms`. */
export async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not seen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
