// A clock a test moves by hand (invitation, session and code expiry): real time plus an offset, so that time
// still passes between requests. Pass it to startTestServer({ clock }).
import type { Clock } from '../../schema/lib/clock.ts';

export interface MovableClock extends Clock {
  /** Moves the clock forward (or back, with a negative number) by this many seconds. */
  advance(seconds: number): void;
  /** Back to real time. */
  reset(): void;
}

export function movableClock(): MovableClock {
  let offsetMs = 0;
  return {
    now: () => new Date(Date.now() + offsetMs),
    advance: (seconds) => {
      offsetMs += seconds * 1000;
    },
    reset: () => {
      offsetMs = 0;
    },
  };
}

export const MINUTE = 60;
export const DAY = 24 * 3600;
