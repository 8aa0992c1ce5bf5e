import { type Command, InvalidArgumentError, Option } from "commander";
import { withRegistrations } from "../../app/cli.ts";
import { shopDomain, UnknownShopError, wholeNumber } from "../../cli/arguments.ts";
import { formatTable } from "../../cli/table.ts";
import { ConfigError } from "../../config/env.ts";
import type { RuntimeConfig } from "../../config/runtime-config.ts";
import { INSTANT_FORMS, parseInstantText } from "../../lib/instant.ts";
import {
  RegistrationReader,
  registrationCsvHeader,
  registrationCsvRow,
  registrationRow,
} from "./index.ts";

const since = (value: string) => {
  const ms = parseInstantText(value);
  if (ms === null) {
    throw new InvalidArgumentError(`must be ${INSTANT_FORMS}`);
  }
  // As every command's --since: a date in the future would list nothing, with exit 0, as if the
  // shop had no registrations.
  if (ms > Date.now()) {
    throw new InvalidArgumentError(
      "must not be in the future: no registration has been made since then; give a past date",
    );
  }
  return ms;
};

interface ListOpts {
  shop: string;
  since?: number;
  limit?: number;
  json?: boolean;
  csv?: boolean;
  email?: string;
  channel?: string;
  externalId?: string;
}

/** A cell on one terminal line: customers' line breaks, tabs and escape codes become spaces. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
const CONTROL = /[\u0000-\u001f\u007f-\u009f]+/g;
const oneLine = (text: string) => text.replace(CONTROL, " ");

const TABLE_HEAD = {
  externalId: "external ID",
  customer: "customer",
  email: "email",
  channel: "channel",
  items: "items",
  created: "created",
} as const;

export function registerRegistrationsCommand(program: Command, config: RuntimeConfig) {
  program
    .command("registrations")
    .description("product registrations customers made with the provider")
    .command("list")
    .description(
      "list a shop's registrations, newest first, across every page (a table; --json or --csv for all fields)",
    )
    .requiredOption("--shop <domain>", "the shop", shopDomain)
    .option("--since <date>", "only registrations created since (2026-01-31 or a date-time)", since)
    .option("--limit <n>", "at most this many registrations", wholeNumber({ min: 1 }))
    .option("--email <address>", "only this customer's registrations")
    .option("--channel <name>", "only registrations made through this channel")
    .option("--external-id <id>", "only the registration with this external ID")
    .addOption(new Option("--json", "print a JSON array, one registration a line").conflicts("csv"))
    .addOption(new Option("--csv", "print CSV (RFC 4180) with a header line"))
    .action(async (opts: ListOpts) => {
      await withRegistrations(config, async (reader, ctx) => {
        const shop = await ctx.shops.getShop(opts.shop);
        if (!shop) {
          throw new UnknownShopError(opts.shop);
        }
        if (RegistrationReader.problem(shop)) {
          throw new ConfigError(
            `shop ${opts.shop} has no provider connection yet: set it on the settings page (Provider connection), or with \`connector shops add --shop ${opts.shop} --provider-client-id … --provider-client-secret … --store-id …\``,
          );
        }
        const registrations = reader.list(shop, {
          since: opts.since,
          limit: opts.limit,
          customerEmail: opts.email,
          channelName: opts.channel,
          externalId: opts.externalId,
        });
        const out = (text: string) => process.stdout.write(text);
        if (opts.csv) {
          out(registrationCsvHeader());
          for await (const r of registrations) out(registrationCsvRow(r));
          return;
        }
        if (opts.json) {
          // One array, streamed: each registration whole, on a line of its own.
          let count = 0;
          out("[");
          for await (const r of registrations)
            out(`${count++ === 0 ? "\n" : ",\n"}${JSON.stringify(r)}`);
          out(count === 0 ? "]\n" : "\n]\n");
          return;
        }
        const rows = [];
        for await (const r of registrations) {
          const row = registrationRow(r);
          rows.push(
            Object.fromEntries(
              Object.entries(TABLE_HEAD).map(([key, head]) => [
                head,
                oneLine(row[key as keyof typeof row]),
              ]),
            ),
          );
        }
        const sinceText =
          opts.since === undefined ? "" : ` since ${new Date(opts.since).toISOString()}`;
        if (rows.length === 0) {
          console.log(`no registrations for ${opts.shop}${sinceText}`);
          return;
        }
        console.log(formatTable(rows));
        console.log(
          `${rows.length} registration${rows.length === 1 ? "" : "s"}${sinceText}, newest first${
            opts.limit !== undefined && rows.length === opts.limit
              ? ` (the first ${opts.limit}: --limit)`
              : ""
          }`,
        );
      });
    });
}
