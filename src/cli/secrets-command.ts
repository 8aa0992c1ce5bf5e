import type { Command } from "commander";
import { withContext } from "../app/cli.ts";
import type { RuntimeConfig } from "../config/runtime-config.ts";
import { rotateSecrets } from "../ops/index.ts";

/**
 * `connector secrets rotate`: after ENCRYPTION_KEY was set to a new key and the old one kept as
 * ENCRYPTION_KEY_PREVIOUS on every process, re-seals everything under the new key. Then the
 * previous key can be removed.
 */
export function registerSecretsCommand(program: Command, config: RuntimeConfig) {
  const secrets = program.command("secrets").description("the secrets the connector stores sealed");
  secrets
    .command("rotate")
    .description("re-seal every stored secret under ENCRYPTION_KEY (see docs/operations.md)")
    .option("--json", "print the report as JSON")
    .action(async (opts: { json?: boolean }) => {
      const report = await withContext(config, (ctx) =>
        rotateSecrets({
          shops: ctx.shops,
          webhookSecrets: ctx.webhookSecrets,
          db: ctx.db,
          redis: ctx.redis,
          prefix: ctx.prefix,
          secrets: ctx.secrets,
        }),
      );
      if (opts.json) {
        console.log(JSON.stringify(report, null, 2));
      } else {
        console.log(
          `re-sealed ${report.resealed} stored secrets and ${report.sessionsResealed} Shopify sessions under key ${report.keyId}; ${report.alreadyCurrent} were current; dropped ${report.providerTokensDropped} cached provider tokens`,
        );
        for (const u of report.unreadable) {
          console.log(
            `  cannot open ${u.shop}'s ${u.what} with ENCRYPTION_KEY or ENCRYPTION_KEY_PREVIOUS: left as it is`,
          );
        }
        for (const c of report.changing) {
          console.log(
            `  ${c.shop}'s ${c.what} was written again each time it was re-sealed: run \`connector secrets rotate\` again`,
          );
        }
      }
      if (report.unreadable.length > 0 || report.changing.length > 0) process.exitCode = 1;
    });
}
