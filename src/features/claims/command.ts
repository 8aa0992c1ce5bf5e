import type { Command } from "commander";
import { shopDomain, UnknownShopError, wholeNumber } from "../../cli/arguments.ts";
import { withStore } from "../../cli/shops-command.ts";
import { formatTable } from "../../cli/table.ts";
import { ConfigError } from "../../config/env.ts";
import type { RuntimeConfig } from "../../config/runtime-config.ts";
import { ProviderEventRepository, ShopRepository } from "../../store/index.ts";
import { ClaimRepository } from "./repository.ts";

const minute = (iso: string | null) => (iso ? iso.slice(0, 16).replace("T", " ") : "");

/**
 * `connector claims list|events`: the claims the provider reported for a shop, and the
 * provider's events about its store as received (topic and outcome; never the bodies, which
 * carry customer data).
 */
export function registerClaimsCommand(program: Command, config: RuntimeConfig) {
  const claims = program
    .command("claims")
    .description("the provider's claims and events (POST /webhooks/provider)");

  const withShop = async <T>(
    shopName: string,
    action: (ctx: {
      shop: NonNullable<Awaited<ReturnType<ShopRepository["getShop"]>>>;
      claims: ClaimRepository;
      events: ProviderEventRepository;
    }) => Promise<T>,
  ): Promise<T> =>
    withStore(config, async (db) => {
      const shop = await new ShopRepository(db).getShop(shopName);
      if (!shop) throw new UnknownShopError(shopName);
      return await action({
        shop,
        claims: new ClaimRepository(db),
        events: new ProviderEventRepository(db),
      });
    });

  claims
    .command("list")
    .description("the shop's claims and shipping claims at their latest status, newest first")
    .requiredOption("--shop <domain>", "the shop", shopDomain)
    .option("--limit <n>", "how many", wholeNumber({ min: 1, max: 500 }), 50)
    .option("--json", "print JSON")
    .action(async (opts: { shop: string; limit: number; json?: boolean }) => {
      const rows = await withShop(opts.shop, (ctx) =>
        ctx.claims.listForShop(opts.shop, opts.limit),
      );
      if (opts.json) return console.log(JSON.stringify(rows, null, 2));
      if (rows.length === 0) return console.log(`no claims reported for ${opts.shop} yet`);
      console.log(
        formatTable(
          rows.map((c) => ({
            kind: c.kind,
            claim: c.externalId ?? c.claimId,
            status: c.status ?? "",
            order: c.sourceOrderId ? (c.orderName ?? c.sourceOrderId) : "not linked",
            "updated (UTC)": minute(c.updatedOn),
            tag: c.tagError ? `not tagged: ${c.tagError}` : (c.taggedStatus ?? ""),
          })),
        ),
      );
    });

  claims
    .command("events")
    .description("the provider's latest events about the shop's store, as received")
    .requiredOption("--shop <domain>", "the shop", shopDomain)
    .option("--limit <n>", "how many", wholeNumber({ min: 1, max: 500 }), 20)
    .option("--json", "print JSON (without the bodies: they carry customer data)")
    .action(async (opts: { shop: string; limit: number; json?: boolean }) => {
      const rows = await withShop(opts.shop, async (ctx) => {
        if (ctx.shop.storeId === null) {
          throw new ConfigError(
            `${opts.shop} has no provider store yet: choose it on the settings page`,
          );
        }
        const events = await ctx.events.recent(
          { providerBaseUrl: ctx.shop.providerBaseUrl, storeId: ctx.shop.storeId },
          { limit: opts.limit },
        );
        return events.map(({ payload: _body, shops: _shops, ...event }) => event);
      });
      if (opts.json) return console.log(JSON.stringify(rows, null, 2));
      if (rows.length === 0) return console.log(`no provider events for ${opts.shop}'s store yet`);
      console.log(
        formatTable(
          rows.map((e) => ({
            "received (UTC)": minute(e.receivedAt),
            event: e.eventId,
            topic: e.topic ?? "(none)",
            outcome: e.outcome ?? "waiting for the worker",
          })),
        ),
      );
    });
}
