// What a command's failure is: the exit code and what stderr says (cli.ts; the README, Command-line tool).
import type { Detail } from './answers.ts';

/** A command used wrongly: exit code 2, with the command's usage. */
export class UsageError extends Error {}
/** The API refused, or could not be reached or read: exit code 1, with its description. */
export class ApiError extends Error {
  readonly status: number;
  readonly details: Detail[];
  /** The answer's `error` code (an OAuth error at the /oauth endpoints), when it had one. */
  readonly code: string | undefined;
  constructor(status: number, message: string, details: Detail[] = [], code?: string) {
    super(message);
    this.status = status;
    this.details = details;
    this.code = code;
  }
}
