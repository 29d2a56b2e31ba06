/** Time comes from the context so that tests can move it (code and token expiry). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export const addSeconds = (date: Date, seconds: number) => new Date(date.getTime() + seconds * 1000);
export const epochSeconds = (date: Date) => Math.floor(date.getTime() / 1000);
