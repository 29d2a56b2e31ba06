#!/usr/bin/env node
// `tessera`: the command-line tool for organizations, the product catalog and subscriptions, over the REST interface only (the README, Command-line tool).
import {
  checkPositionals,
  createApi,
  createOutput,
  GLOBAL_HELP,
  helpOf,
  HELP_WIDTH,
  parse,
  SECRET_FLAG_WARNING,
  wrap,
  type Command,
} from './tessera/cli.ts';
import { ApiError, UsageError } from './tessera/errors.ts';
import { login } from './tessera/login.ts';
import { logout } from './tessera/logout.ts';
import { whoami } from './tessera/whoami.ts';
import { organizationsCreate } from './tessera/organizations-create.ts';
import { organizationsList } from './tessera/organizations-list.ts';
import { organizationsGet } from './tessera/organizations-get.ts';
import { productsCreate } from './tessera/products-create.ts';
import { productsList } from './tessera/products-list.ts';
import { productsGet } from './tessera/products-get.ts';
import { productsUpdate } from './tessera/products-update.ts';
import { productsDelete } from './tessera/products-delete.ts';
import { subscriptionsCreate } from './tessera/subscriptions-create.ts';
import { subscriptionsList } from './tessera/subscriptions-list.ts';
import { subscriptionsGet } from './tessera/subscriptions-get.ts';
import { subscriptionsUpdate } from './tessera/subscriptions-update.ts';
import { subscriptionsCancel } from './tessera/subscriptions-cancel.ts';

const COMMANDS: Command[] = [
  login,
  logout,
  whoami,
  organizationsCreate,
  organizationsList,
  organizationsGet,
  productsCreate,
  productsList,
  productsGet,
  productsUpdate,
  productsDelete,
  subscriptionsCreate,
  subscriptionsList,
  subscriptionsGet,
  subscriptionsUpdate,
  subscriptionsCancel,
];

function overview(group?: string): string {
  const listed = COMMANDS.filter((c) => !group || c.name.startsWith(`${group} `));
  const width = Math.max(...listed.map((c) => c.name.length));
  return (
    `Usage: tessera <command> [options]\n\nCommands:\n${listed.map((c) => wrap(`  ${c.name.padEnd(width)}  ${c.summary}`, HELP_WIDTH, width + 4)).join('\n')}\n\n` +
    `Run "tessera <command> --help" for a command's options.\n\n${GLOBAL_HELP}\n`
  );
}

async function main(argv: string[]): Promise<number> {
  const [group, action] = argv;
  // "login" is one word, "products create" two.
  const command = COMMANDS.find((c) => c.name === group || c.name === `${group} ${action}`);
  const nameWords = command?.name.split(' ').length ?? 0;
  if (!command) {
    const known = COMMANDS.some((c) => c.name.startsWith(`${group} `));
    const words = argv.filter((a) => !a.startsWith('-'));
    // "tessera --help" and "tessera products --help": the overview of all, or of the group.
    if ((argv.includes('--help') || argv.includes('-h')) && (words.length === 0 || (known && words.length === 1))) {
      process.stdout.write(overview(known ? group : undefined));
      return 0;
    }
    const problem = words.length ? `unknown command "${words.slice(0, 2).join(' ')}"` : 'a command is needed';
    process.stderr.write(`tessera: ${problem}\n\n${overview(known ? group : undefined)}`);
    return 2;
  }
  let parsed;
  try {
    parsed = parse(command, argv.slice(nameWords));
    if (parsed.values.secret !== undefined) process.stderr.write(SECRET_FLAG_WARNING);
    if (parsed.values.help) {
      process.stdout.write(helpOf(command));
      return 0;
    }
    const positional = checkPositionals(command, parsed.positionals);
    const out = createOutput(!!parsed.values.json, (text) => process.stdout.write(text));
    await command.run({
      values: parsed.values,
      positional: () => {
        // Counted by checkPositionals; none here is a command that reads an argument it does not declare.
        if (positional === undefined) throw new UsageError(`expected one ${command.positional ?? 'argument'}, got 0`);
        return positional;
      },
      api: createApi(parsed.values, process.env, readStdin),
      out,
    });
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`tessera ${command.name}: ${error.message}\n\n${helpOf(command)}`);
      return 2;
    }
    if (error instanceof ApiError) {
      const details = error.details.map((d) => `\n  ${d.path}: ${d.message}`).join('');
      process.stderr.write(`error: ${error.message}${details}\n`);
      return 1;
    }
    throw error;
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

process.exitCode = await main(process.argv.slice(2));
