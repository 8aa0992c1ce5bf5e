import {
  type Argument,
  Command,
  CommanderError,
  InvalidArgumentError,
  type Option,
} from "commander";
import type { RuntimeConfig } from "../config/runtime-config.ts";
import { registerClaimsCommand } from "../features/claims/command.ts";
import { registerProductsCommand } from "../features/products/command.ts";
import { registerRegistrationsCommand } from "../features/registrations/command.ts";
import { registerDlqCommand } from "./dlq-command.ts";
import { cliLine } from "./errors.ts";
import { registerSandboxCommand } from "./sandbox-command.ts";
import { registerSecretsCommand } from "./secrets-command.ts";
import { registerShopifyStandInCommand } from "./shopify-standin-command.ts";
import { registerOrdersCommand, registerShopsCommand } from "./shops-command.ts";
import { registerStatusCommand } from "./status-command.ts";
import { registerSyncCommands } from "./sync-commands.ts";
import { registerWebhookCommand } from "./webhook-command.ts";

/** The exit code of a command line the CLI cannot run as typed (as `grep` and `curl` use it). */
export const USAGE_EXIT_CODE = 2;

/**
 * The `connector` command with every subcommand, not yet parsed. Every mistyped command line
 * (an unknown command or option, a missing or bad value, an option given twice with two values)
 * ends the same way: one line on stderr naming the mistake and the command's `--help`, exit 2.
 */
export function buildProgram(config: RuntimeConfig): Command {
  const program = new Command("connector").description(
    "Shopify → shipping-protection order sync connector",
  );
  // Inherited by every subcommand created below: commander throws instead of exiting, so the
  // entry point sets the exit code and closes what it opened.
  program.exitOverride();
  registerSandboxCommand(program, config);
  registerShopifyStandInCommand(program);
  registerShopsCommand(program, config);
  registerOrdersCommand(program, config);
  registerRegistrationsCommand(program, config);
  registerDlqCommand(program, config);
  registerStatusCommand(program, config);
  registerSyncCommands(program, config);
  registerSecretsCommand(program, config);
  registerProductsCommand(program, config);
  registerClaimsCommand(program, config);
  registerWebhookCommand(program, {
    url: `${config.appUrl}/webhooks/shopify`,
    secret: config.shopifyApiSecret,
    secretSet: config.env.SHOPIFY_API_SECRET !== undefined,
  });
  for (const command of allCommands(program)) {
    const path = commandPath(command);
    command.configureOutput({
      // commander's "error: …" (and its "(Did you mean …?)" on a line of its own) as one line
      // that also says where the right spelling is.
      outputError: (text, write) =>
        write(
          `${cliLine(
            `${text
              .trim()
              .replace(/^error: /, "")
              .replace(/ is invalid( for argument '[^']*')?\. /, " is invalid$1: ")
              .replace(/\s*\n\s*/g, " ")
              .replace(/\.$/, "")}; see \`${path} --help\``,
          )}\n`,
        ),
    });
    refuseEmptyValues(command);
    refuseRepeatedValues(command);
  }
  return program;
}

/**
 * The exit code for a CommanderError: 0 for the help asked for (`--help`, `help status`), 2 for
 * a command line that is wrong (a group without its subcommand prints its help on stderr).
 */
export function exitCodeOf(error: CommanderError): number {
  if (error.code === "commander.helpDisplayed" || error.code === "commander.version") return 0;
  if (error.code === "commander.help" && error.exitCode === 0) return 0;
  return USAGE_EXIT_CODE;
}

export { CommanderError };

/** The command and its subcommands, depth first. */
export function allCommands(command: Command): Command[] {
  return [command, ...command.commands.flatMap(allCommands)];
}

/** "connector dlq list". */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/** Whether an option may be given more than once: its help says "(repeatable)". */
export const isRepeatable = (option: Option) => /\(repeatable\)/.test(option.description);

/** An option whose value is a secret (`--provider-client-secret`, `--access-token`, …). */
const isSecret = (option: Option) => /secret|token|password|key/i.test(option.long ?? "");

/**
 * An option or argument given an empty value (`--order ""`, `--email "$UNSET_VARIABLE"`, `dlq
 * show ""`): refused, naming it, before its own parser runs. Each command would otherwise read
 * the value as not given: a resync of `--order ""` resynced every order, `registrations list
 * --email ""` listed every customer's registrations, `shops update --currency ""` changed nothing
 * and said nothing of it. No option or argument of the CLI takes an empty value.
 */
function refuseEmptyValues(command: Command) {
  const guard = (target: Option | Argument) => {
    const parse = target.parseArg;
    target.argParser((value: string, previous: unknown) => {
      if (value.trim() === "") {
        throw new InvalidArgumentError("must not be empty");
      }
      return parse ? parse(value, previous) : value;
    });
  };
  for (const option of command.options) {
    if ((option.required || option.optional) && !option.variadic) guard(option);
  }
  for (const argument of command.registeredArguments) {
    if (!argument.variadic) guard(argument);
  }
}

/**
 * An option that takes one value, given twice with two values (`--shop a… --shop b…`):
 * commander would keep the last one silently, and a resync or a backfill would run on a shop
 * the operator may not have meant. Refused, naming both values (never a secret's).
 */
function refuseRepeatedValues(command: Command) {
  for (const option of command.options) {
    if (!(option.required || option.optional) || option.variadic || isRepeatable(option)) continue;
    let first: string | undefined;
    command.on(`option:${option.name()}`, (value: string) => {
      if (first === undefined) {
        first = value;
      } else if (value !== first) {
        const values = isSecret(option) ? "" : ` (${first}, then ${value})`;
        command.error(`error: option '${option.flags}' was given twice${values}: give it once`, {
          exitCode: USAGE_EXIT_CODE,
          code: "connector.repeatedOption",
        });
      }
    });
  }
}
