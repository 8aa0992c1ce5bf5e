import { HttpRequestError } from "@shopify/shopify-api";
import { ConfigError } from "../config/env.ts";
import { RegistrationsUnavailableError } from "../features/registrations/index.ts";
import { ServiceLostError } from "../lib/outage.ts";
import { ShopifyTokenError } from "../shopify/admin-client.ts";
import { ShopNotConnectedError } from "../shopify/admin-clients.ts";
import { InputFileError } from "./input-file.ts";
import { printable } from "./table.ts";

/**
 * A command that could not do its work for a reason it has put in words (the cause, what was
 * left as it was, what to do): printed as it is, exit code 1.
 */
export class CommandFailedError extends Error {
  override name = "CommandFailedError";
}

/** What starts every line the CLI writes about a refusal or a failure. */
const PREFIX = "connector: ";

/**
 * A refusal's or a failure's line as the CLI writes it: `connector: ` and the message, whoever
 * wrote the message (a command, commander, a setting's check shared with the processes, such as
 * `REDIS_URL …` or `no shop X here`). The one place that says how such a line starts.
 */
export function cliLine(message: string): string {
  return message.startsWith(PREFIX) ? message : `${PREFIX}${message}`;
}

/**
 * A command's refusal or failure, written on stderr as one line (`cliLine`) with its exit code,
 * for a command that goes on (a delivery among several) or returns by itself.
 */
export function refuse(message: string, code: number): void {
  console.error(cliLine(message));
  process.exitCode = code;
}

/**
 * What the CLI prints for a failure: one line naming the cause and the fix, and the exit code
 * (2 for configuration, 1 otherwise). The stack only with LOG_LEVEL=debug.
 */
export function explainCliError(
  error: unknown,
  context: { appUrl?: string; production?: boolean } = {},
): { line: string; code: number } {
  const { message, code } = explainCause(error, context);
  return { line: cliLine(message), code };
}

function explainCause(
  error: unknown,
  context: { appUrl?: string; production?: boolean },
): { message: string; code: number } {
  // fetch wraps a failure to connect in TypeError("fetch failed"), whose cause is the socket's
  // own error (ECONNREFUSED, ENOTFOUND…): that cause is what to explain.
  if (error instanceof TypeError && error.message === "fetch failed" && error.cause) {
    return explainCause(error.cause, context);
  }
  if (error instanceof ConfigError) return { message: error.message, code: 2 };
  // Redis or Postgres stopped answering while the command ran: the setting is not at fault.
  if (error instanceof ServiceLostError) return { message: error.message, code: 1 };
  if (error instanceof CommandFailedError) return { message: error.message, code: 1 };
  if (error instanceof InputFileError) return { message: error.message, code: 1 };
  // The provider's answer in words (credentials, busy, unreachable); never a stack.
  if (error instanceof RegistrationsUnavailableError) {
    return { message: error.message, code: error.reason === "credentials" ? 2 : 1 };
  }
  if (error instanceof ShopNotConnectedError) {
    // In development the shop is usually the demo shop of `npm start`: say how to give it a
    // Shopify (the stand-in) to read from.
    const local =
      context.production || !error.shop
        ? ""
        : `; locally, run the stand-in Shopify (npx connector shopify-standin), set SHOPIFY_ADMIN_URL to it for the connector and this command, and open ${context.appUrl ?? "http://localhost:3000"}/shopify/install?shop=${error.shop} (docs/products-csv.md, "Trying it on the demo shop")`;
    return { message: `${error.message}${local}`, code: 1 };
  }
  // Only the merchant can fix it (by opening the app); the message says how, and no stack helps.
  if (error instanceof ShopifyTokenError) return { message: error.message, code: 1 };
  if (error instanceof HttpRequestError) {
    return {
      message: `Shopify could not be reached (${error.message}); in local development set SHOPIFY_ADMIN_URL to the stand-in Shopify (npx connector shopify-standin), in production check the network`,
      code: 1,
    };
  }
  const fsError = error as NodeJS.ErrnoException & {
    address?: string;
    port?: number;
    hostname?: string;
  };
  if (fsError?.code === "ENOENT" && fsError.path) {
    return { message: `no such file: ${fsError.path}`, code: 1 };
  }
  if (fsError?.code === "EACCES" && fsError.path) {
    return { message: `permission denied: ${fsError.path}`, code: 1 };
  }
  if (fsError?.code === "ECONNREFUSED") {
    return {
      message: `nothing answers at ${fsError.address ?? "the address"}:${fsError.port ?? "?"} (is the connector running? check REDIS_URL and APP_URL, or the command's --url)`,
      code: 1,
    };
  }
  // A local server (`sandbox`, `shopify-standin`) on a port that is taken, or not this user's.
  if ((fsError?.code === "EADDRINUSE" || fsError?.code === "EACCES") && fsError.port) {
    const why =
      fsError.code === "EADDRINUSE"
        ? "is in use by another program"
        : "may not be used by this user";
    return {
      message: `port ${fsError.port} on ${fsError.address ?? "this machine"} ${why}: stop that program or choose another --port (0 picks a free one)`,
      code: 2,
    };
  }
  if ((fsError?.code === "ENOTFOUND" || fsError?.code === "EAI_AGAIN") && fsError.hostname) {
    return {
      message: `the host ${fsError.hostname} could not be resolved (check the URL, and this machine's DNS)`,
      code: 1,
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { message: `${printable(message)} (LOG_LEVEL=debug shows the stack)`, code: 1 };
}
