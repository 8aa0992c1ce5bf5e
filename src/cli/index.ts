import { Command } from "commander";
import { parseEnv } from "../config/env.ts";
import { resolveRuntimeConfig } from "../config/runtime-config.ts";
import { registerClaimsCommand } from "../features/claims/command.ts";
import { registerProductsCommand } from "../features/products/command.ts";
import { registerRegistrationsCommand } from "../features/registrations/command.ts";
import { registerDlqCommand } from "./dlq-command.ts";
import { explainCliError } from "./errors.ts";
import { registerSandboxCommand } from "./sandbox-command.ts";
import { registerSecretsCommand } from "./secrets-command.ts";
import { registerShopifyStandInCommand } from "./shopify-standin-command.ts";
import { registerOrdersCommand, registerShopsCommand } from "./shops-command.ts";
import { registerStatusCommand } from "./status-command.ts";
import { registerSyncCommands } from "./sync-commands.ts";
import { registerWebhookCommand } from "./webhook-command.ts";

const debug = process.env.LOG_LEVEL === "debug" || process.env.LOG_LEVEL === "trace";
let context: { appUrl?: string; production?: boolean } = {};
try {
  const program = new Command("connector").description(
    "Shopify → shipping-protection order sync connector",
  );
  const config = resolveRuntimeConfig(parseEnv());
  context = { appUrl: config.appUrl, production: config.env.NODE_ENV === "production" };
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
  });
  await program.parseAsync(process.argv);
} catch (error) {
  // One line naming the cause and the fix; the stack only when asked for.
  if (debug) console.error(error);
  const { line, code } = explainCliError(error, context);
  console.error(line);
  process.exitCode = code;
}
