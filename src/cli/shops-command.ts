import { HttpResponseError } from "@shopify/shopify-api";
import { type Command, InvalidArgumentError } from "commander";
import { pino } from "pino";
import { closeWithin, noProviderError, resolveProviderEndpoints, withContext } from "../app/cli.ts";
import type { Core } from "../app/connector.ts";
import { databaseTarget } from "../app/infrastructure.ts";
import { ConfigError } from "../config/env.ts";
import type { RuntimeConfig } from "../config/runtime-config.ts";
import { ServiceLostError, whileAnswering } from "../lib/outage.ts";
import { ANSWER_MS } from "../lib/redis-wait.ts";
import { createSecretBox, sealedFor } from "../lib/secret-box.ts";
import { readHeartbeats } from "../metrics/index.ts";
import { BulkRetryQueue } from "../ops/bulk-retry.ts";
import { type VerifiedStore, verifyProviderCredentials } from "../provider/verify-credentials.ts";
import { needsReconnect } from "../shopify/install/shop-tokens.ts";
import { isShopifyId } from "../shopify/payload-fields.ts";
import {
  createLinkRepository,
  type Db,
  databaseHeartbeat,
  type KeptOutOrder,
  openDatabase,
  type ShopRecord,
  ShopRepository,
  type ShopSettingsInput,
  waitForDatabase,
} from "../store/index.ts";
import type { OrderRef } from "../sync/order-ref.ts";
import {
  currencyCode,
  orderRef,
  shopDomain,
  shopifyId,
  UnknownShopError,
  wholeNumber,
} from "./arguments.ts";
import { CommandFailedError, refuse } from "./errors.ts";
import { formatTable, printable } from "./table.ts";

const positiveId = wholeNumber({ min: 1 });

const locationPair = (value: string, previous: Record<string, number> = {}) => {
  const match = /^(\d+)=(\d+)$/.exec(value);
  if (!match?.[1] || !match[2])
    throw new InvalidArgumentError("must be SHOPIFY_LOCATION_ID=PROVIDER_LOCATION_ID");
  if (!isShopifyId(match[1]))
    throw new InvalidArgumentError("the Shopify location ID must be from 1 to 2^64-1");
  return { ...previous, [match[1]]: positiveId(match[2]) };
};
const collect = (value: string, previous: string[] = []) => [...previous, value];
const variantId = shopifyId("ProductVariant", "variant");
const locationId = shopifyId("Location", "location");
/** `--protection-variant-id` (repeatable): each a variant's ID, kept as its digits. */
const variantIds = (value: string, previous: string[] = []) => collect(variantId(value), previous);
/** `--remove-location` (repeatable): each a Shopify location's ID, kept as its digits. */
const locationIds = (value: string, previous: string[] = []) =>
  collect(locationId(value), previous);

export function registerShopsCommand(program: Command, config: RuntimeConfig) {
  const shops = program.command("shops").description("shops the connector syncs");
  shops
    .command("add")
    .description(
      "register (or update) a shop and its provider credentials; checks them with the provider, and exchanges --access-token with Shopify, first (this needs the connector's Redis: a running `npm start`, or REDIS_URL), unless --no-verify",
    )
    .requiredOption("--shop <domain>", "the shop, e.g. demo-shop.myshopify.com", shopDomain)
    .requiredOption("--provider-client-id <id>", "provider client ID")
    .requiredOption(
      "--provider-client-secret <secret>",
      "provider client secret (stored encrypted)",
    )
    .requiredOption("--store-id <n>", "provider store ID", positiveId)
    .option(
      "--protection-variant-id <id>",
      "Shopify variant ID of the protection product (repeatable)",
      variantIds,
    )
    .option(
      "--location <pair>",
      "SHOPIFY_LOCATION_ID=PROVIDER_LOCATION_ID (repeatable)",
      locationPair,
    )
    .option(
      "--default-location <n>",
      "provider location for unmapped Shopify locations",
      positiveId,
    )
    .option(
      "--currency <code>",
      "the provider store's currency, such as USD (default: the store's, as the provider describes it; another is refused)",
      currencyCode,
    )
    .option(
      "--access-token <token>",
      "the shop's Shopify offline token from this app (SHOPIFY_API_KEY): exchanged at once for an expiring one, which is stored encrypted (the token given is not)",
    )
    .option(
      "--no-verify",
      "save without asking the provider whether the credentials work and cover the store, or Shopify to exchange --access-token (stored as given, exchanged at the connector's next start or sweep)",
    )
    .action(
      async (opts: {
        shop: string;
        providerClientId: string;
        providerClientSecret: string;
        storeId: number;
        protectionVariantId?: string[];
        location?: Record<string, number>;
        defaultLocation?: number;
        currency?: string;
        accessToken?: string;
        verify: boolean;
      }) => {
        const box = createSecretBox(config.encryptionKey, config.previousEncryptionKeys);
        const save = async (
          db: Db,
          currency: string,
          token: ShopSettingsInput,
        ): Promise<{
          record: ShopRecord;
          retired: number;
          waited: boolean;
          resumed?: Reconnect;
        }> => {
          const shops = new ShopRepository(db);
          const waited =
            !!opts.accessToken && needsReconnect((await shops.getShop(opts.shop))?.pausedReason);
          const record = await shops.upsertShop(opts.shop, {
            status: "active",
            storeId: opts.storeId,
            providerClientId: opts.providerClientId,
            providerClientSecretSealed: box.seal(
              opts.providerClientSecret,
              sealedFor.providerClientSecret(opts.shop),
            ),
            storeCurrency: currency.toUpperCase(),
            protectionVariantIds: opts.protectionVariantId ?? [],
            locationMap: opts.location ?? {},
            defaultLocationId: opts.defaultLocation ?? null,
            // A new token: whatever waited for one ("reconnect needed") is over.
            ...(opts.accessToken ? { ...token, pausedReason: null } : {}),
            installedAt: new Date().toISOString(),
          });
          // A new store: the links into the previous one are retired, the orders sent again.
          const retired = await createLinkRepository(db).retireOutside(
            opts.shop,
            { storeId: opts.storeId, providerBaseUrl: null },
            `the shop switched to store ${opts.storeId}`,
          );
          return { record, retired, waited };
        };
        // Nothing to ask the provider with: said before the connector's Redis is looked for.
        if (opts.verify) providerToAsk(config);
        const { record, retired, waited, resumed } = opts.verify
          ? // As the settings page does before it saves: a token, then the store; then the
            // Shopify token exchanged, as the migration does, so that one Shopify will not take
            // is refused here rather than pausing the shop later.
            await withContext(config, async (ctx) => {
              const store = await verifiedStore(
                config,
                opts.providerClientId,
                opts.providerClientSecret,
                opts.storeId,
                ctx,
              );
              const currency = currencyOf(store, opts.currency) ?? "USD";
              if (!opts.accessToken) return save(ctx.db, currency, {});
              const saved = await exchangedAndSaved(
                config,
                ctx,
                opts.shop,
                opts.accessToken,
                (columns) => save(ctx.db, currency, columns),
              );
              // What the merchant reopening the app would have resumed: queued for a worker.
              return saved.waited
                ? { ...saved, resumed: await queueReconnect(ctx, opts.shop) }
                : saved;
            })
          : await withStore(config, (db) =>
              save(db, opts.currency ?? "USD", {
                // Stored as given, with no expiring pair: the next start or sweep exchanges it.
                accessTokenSealed: opts.accessToken
                  ? box.seal(opts.accessToken, sealedFor.shopifyAccessToken(opts.shop))
                  : null,
                accessTokenExpiresAt: null,
                accessTokenRefreshAt: null,
                refreshTokenSealed: null,
                refreshTokenExpiresAt: null,
              }),
            );
        if (retired > 0) {
          console.log(
            `${retired} orders were linked to another provider store: they will be sent to store ${opts.storeId} the next time they change (kept for the record)`,
          );
        }
        const token = !opts.accessToken
          ? ""
          : opts.verify
            ? "; its Shopify token was exchanged for an expiring one, stored encrypted (the token given no longer works)"
            : "; its Shopify token is stored as given, not checked: the connector exchanges it for an expiring one at its next start or sweep (`connector shops migrate-tokens` does it now)";
        console.log(
          `shop ${record.shop} registered: provider store ${record.storeId}, status ${record.status}${token}`,
        );
        if (resumed) {
          console.log(
            `the shop was waiting for a new Shopify token: what waited (its paused backfill, the orders dead-lettered while Shopify refused the token, the claims' order tags) is ${resumed.created ? "queued" : "already queued"} as job ${resumed.id} on the maintenance queue; a worker runs it${resumed.workerRunning ? "" : ", and none is running now: it waits until one starts (`npm start`, or the worker role)"}`,
          );
        } else if (waited) {
          // --no-verify reaches no Redis: nothing is queued, the commands do it.
          console.log(
            `the shop was waiting for a new Shopify token: \`connector dlq retry --all --shop ${record.shop} --reason config\` queues again the orders that waited, \`connector backfill --shop ${record.shop} --detach\` resumes a paused backfill`,
          );
        }
      },
    );
  shops
    .command("update")
    .description("change one or more settings of a registered shop (the secret stays as it is)")
    .requiredOption("--shop <domain>", "the shop", shopDomain)
    .option(
      "--location <pair>",
      "add or change SHOPIFY_LOCATION_ID=PROVIDER_LOCATION_ID (repeatable)",
      locationPair,
    )
    .option(
      "--remove-location <id>",
      "remove a Shopify location from the map (repeatable)",
      locationIds,
    )
    .option(
      "--default-location <n>",
      "provider location for unmapped Shopify locations",
      positiveId,
    )
    .option(
      "--store-id <n>",
      "provider store ID (a new store: orders are sent again to it)",
      positiveId,
    )
    .option(
      "--protection-variant-id <id>",
      "Shopify variant ID of the protection product; replaces the list (repeatable)",
      variantIds,
    )
    .option(
      "--currency <code>",
      "the provider store's currency, such as USD (checked against the store's)",
      currencyCode,
    )
    .option(
      "--no-verify",
      "with --store-id or --currency: save without asking the provider whether the store is covered and keeps that currency",
    )
    .action(
      async (opts: {
        shop: string;
        location?: Record<string, number>;
        removeLocation?: string[];
        defaultLocation?: number;
        storeId?: number;
        protectionVariantId?: string[];
        currency?: string;
        verify: boolean;
      }) => {
        await withStore(config, async (db) => {
          const repository = new ShopRepository(db);
          const shop = await repository.getShop(opts.shop);
          if (!shop) {
            throw new UnknownShopError(opts.shop);
          }
          // Another store, or a currency: the shop's saved credentials must cover the store, as
          // `shops add` checks, and the currency must be the one the store keeps.
          const newStore = opts.storeId !== undefined && opts.storeId !== shop.storeId;
          const storeId = opts.storeId ?? shop.storeId;
          let currency = opts.currency;
          if (
            opts.verify &&
            (newStore || opts.currency !== undefined) &&
            storeId !== null &&
            shop.providerClientId &&
            shop.providerClientSecretSealed
          ) {
            const box = createSecretBox(config.encryptionKey, config.previousEncryptionKeys);
            const secret = box.open(
              shop.providerClientSecretSealed,
              sealedFor.providerClientSecret(opts.shop),
            );
            const store = await verifiedStore(config, shop.providerClientId, secret, storeId);
            // A new store brings its own currency, as choosing it on the settings page does.
            currency = currencyOf(store, opts.currency) ?? undefined;
            if (!opts.currency && currency === shop.storeCurrency) currency = undefined;
          }
          const unknown = (opts.removeLocation ?? []).filter((id) => !(id in shop.locationMap));
          if (unknown.length > 0) {
            throw new ConfigError(
              `--remove-location: ${unknown.join(", ")} ${unknown.length > 1 ? "are" : "is"} not in the location map (${Object.keys(shop.locationMap).join(", ") || "empty"})`,
            );
          }
          const locationMap = { ...shop.locationMap, ...(opts.location ?? {}) };
          for (const id of opts.removeLocation ?? []) delete locationMap[id];
          const changes = {
            ...(opts.location || opts.removeLocation ? { locationMap } : {}),
            ...(opts.defaultLocation !== undefined
              ? { defaultLocationId: opts.defaultLocation }
              : {}),
            ...(opts.storeId !== undefined ? { storeId: opts.storeId } : {}),
            ...(opts.protectionVariantId ? { protectionVariantIds: opts.protectionVariantId } : {}),
            ...(currency ? { storeCurrency: currency.toUpperCase() } : {}),
          };
          if (Object.keys(changes).length === 0) {
            throw new ConfigError("nothing to change: give at least one option (see --help)");
          }
          await repository.updateSettings(opts.shop, changes);
          const retired =
            opts.storeId !== undefined && opts.storeId !== shop.storeId
              ? await createLinkRepository(db).retireOutside(
                  opts.shop,
                  { storeId: opts.storeId, providerBaseUrl: null },
                  `the shop switched to store ${opts.storeId}`,
                )
              : 0;
          console.log(`shop ${opts.shop} updated: ${Object.keys(changes).join(", ")}`);
          if (retired > 0) {
            console.log(
              `${retired} orders were linked to store ${shop.storeId}: they will be sent to store ${opts.storeId} the next time they change (\`connector backfill --shop ${opts.shop}\` sends them now)`,
            );
          }
        });
      },
    );
  shops
    .command("migrate-tokens")
    .description(
      "exchange every shop's non-expiring Shopify token for an expiring one (Shopify refuses them from 2027-01-01)",
    )
    .option("--json", "print JSON")
    .action(async (opts: { json?: boolean }) => {
      const results = await withContext(config, (ctx) => ctx.shopTokens.migrateAll());
      if (opts.json) console.log(JSON.stringify(results, null, 2));
      else if (results.length === 0) console.log("every shop already holds an expiring token");
      else {
        for (const r of results) {
          console.log(`${r.result} ${r.shop}${migrationNote(r)}`);
        }
      }
      if (results.some((r) => r.result !== "migrated")) process.exitCode = 1;
    });
  shops
    .command("list")
    .description("list shops and how their orders stand")
    .option("--json", "print JSON")
    .action(async (opts: { json?: boolean }) => {
      const rows = await withStore(config, async (db) => {
        const links = createLinkRepository(db);
        const rows = [];
        for (const s of await new ShopRepository(db).listShops()) {
          rows.push({
            shop: s.shop,
            status: s.status,
            storeId: s.storeId,
            ...(await links.countByResult(s.shop)),
            ...(s.pausedReason ? { pausedReason: s.pausedReason } : {}),
          });
        }
        return rows;
      });
      if (opts.json) console.log(JSON.stringify(rows, null, 2));
      else if (rows.length === 0) console.log("no shops yet: add one with `connector shops add`");
      else console.log(formatTable(rows));
    });
}

export function registerOrdersCommand(program: Command, config: RuntimeConfig) {
  program
    .command("orders")
    .description("orders and their provider links")
    .command("show")
    .description(
      "show an order's provider IDs, line items, fulfillments, last result and last sync's trace ID",
    )
    .requiredOption("--shop <domain>", "the shop", shopDomain)
    .requiredOption(
      "--order <id-or-name>",
      "Shopify order ID (820982911946154508 or its gid://shopify/Order/… form), or its name such as #1001",
      orderRef,
    )
    .option("--json", "print JSON")
    .action(async (opts: { shop: string; order: OrderRef; json?: boolean }) => {
      const found = await withStore(config, async (db) => {
        const shops = new ShopRepository(db);
        // An unknown shop is not an order that failed to sync: say which it is.
        if (!(await shops.getShop(opts.shop))) throw new UnknownShopError(opts.shop);
        const links = createLinkRepository(db);
        // Digits are an ID, then a name (#100001 of a shop past 99,999 orders), as resync reads them.
        const { id, name } = opts.order;
        const byId = id !== null ? await links.getOrderLinkRow(opts.shop, id) : null;
        const byName = byId || name === null ? null : await links.findByOrderName(opts.shop, name);
        const sourceOrderId = byId
          ? (id as string)
          : (byName?.sourceOrderId ?? id ?? (name as string));
        const row = await links.getOrderLinkRow(opts.shop, sourceOrderId);
        const detail = await links.loadLinks(opts.shop, sourceOrderId);
        if (!row || !detail) {
          // Why the provider has no order for it, as recorded: a failure, or an order kept out
          // (a test order, a sale that ships nothing), by its ID or its name.
          const failure = await links.failureOf(opts.shop, sourceOrderId);
          const keptOut = failure ? null : await shops.keptOutOrder(opts.shop, sourceOrderId);
          const unnamed = failure || keptOut ? 0 : await shops.countKeptOutWithoutName(opts.shop);
          return {
            missing: notAtProvider(
              { shop: opts.shop, order: opts.order.text },
              failure,
              keptOut,
              unnamed,
            ),
          } as const;
        }
        return { sourceOrderId, row, detail } as const;
      });
      if (found.missing !== undefined) {
        refuse(found.missing, 1);
        return;
      }
      const { sourceOrderId, row, detail } = found;
      const view = {
        shop: opts.shop,
        sourceOrderId,
        orderName: row.orderName,
        providerStoreId: row.storeId,
        providerOrderId: row.orderId,
        canceledAt: row.canceledAt,
        lastResult: row.lastResult,
        lastError: row.lastError,
        lastSyncedAt: row.lastSyncedAt,
        syncedVersion: row.syncedVersion,
        lastTraceId: row.lastTraceId,
        lineItems: detail.lineItems,
        fulfillments: detail.fulfillments,
      };
      if (opts.json) {
        console.log(JSON.stringify(view, null, 2));
        return;
      }
      console.log(
        [
          `${view.orderName ?? sourceOrderId} (Shopify ${sourceOrderId}) → provider order ${view.providerOrderId} in store ${view.providerStoreId}`,
          `  last result: ${view.lastResult ?? "in progress"}${view.lastError ? ` (${printable(view.lastError)})` : ""}, synced version ${view.syncedVersion ?? "-"}`,
          ...(view.lastTraceId ? [`  last sync trace: ${view.lastTraceId}`] : []),
          ...(view.canceledAt ? [`  canceled at ${view.canceledAt}`] : []),
          ...detail.lineItems.map(
            (l) =>
              `  line ${l.sourceLineItemId} → ${l.lineItemId}${l.canceledAt ? ` (canceled ${l.canceledAt})` : ""}`,
          ),
          ...detail.fulfillments.map(
            (f) => `  fulfillment ${f.sourceFulfillmentId} → ${f.fulfillmentId}`,
          ),
        ].join("\n"),
      );
    });
}

/**
 * One line on why `orders show` finds no provider order: its recorded failure (the reason, as
 * the dead-letter queue has it), an order kept out on purpose (a test order the shop's setting
 * keeps out, a sale without an address that ships nothing), or neither yet.
 */
function notAtProvider(
  opts: { shop: string; order: string },
  failure: Awaited<ReturnType<ReturnType<typeof createLinkRepository>["failureOf"]>>,
  keptOut: KeptOutOrder | null,
  keptOutWithoutName: number,
): string {
  if (failure) {
    const name = failure.orderName ?? opts.order;
    const state =
      failure.result === "failed"
        ? `failed at ${failure.failedAt}, being retried`
        : `dead-lettered (${failure.category ?? "uncategorised"}) at ${failure.failedAt}`;
    // A discarded dead letter is no longer listed: a resync is what tries the order again.
    const next =
      failure.result === "discarded"
        ? `its dead letter was discarded; \`connector resync --shop ${opts.shop} --order ${failure.sourceOrderId}\` tries it again`
        : `\`connector dlq list --shop ${opts.shop}\``;
    return `${name} (Shopify ${failure.sourceOrderId}) is not at the provider: ${state}: ${printable(failure.error)} (${next})`;
  }
  if (keptOut) {
    const which = keptOut.orderName
      ? `${keptOut.orderName} (Shopify ${keptOut.sourceOrderId})`
      : `Shopify order ${keptOut.sourceOrderId}`;
    return keptOut.reason === "test"
      ? `${which} is a test order, not sent to the provider (${keptOut.at}): the shop's test-order setting is off; turn it on in the settings page and the order's next change sends it`
      : `${which} is not sent to the provider (${keptOut.at}): it was sold without an address to ship to and nothing ships, e.g. a point-of-sale sale; nothing to do, or add the customer's address to the order in Shopify and its next change sends it`;
  }
  const unnamed =
    keptOutWithoutName > 0
      ? `, or an order kept out before the connector recorded names (${keptOutWithoutName} such; give its Shopify ID to tell)`
      : "";
  return `no provider order is linked to ${opts.order} in ${opts.shop}: not synced yet${unnamed}`;
}

/**
 * The commands that need only the links store (`shops add|update|list`, `orders show`,
 * `claims …`): opened by `openStore`, bounded like `withContext` while the action runs (a
 * Postgres that stops answering ends the command with one line), and closed.
 */
export async function withStore<T>(
  config: RuntimeConfig,
  action: (db: Db) => Promise<T>,
): Promise<T> {
  const db = await openStore(config);
  let lost = false;
  try {
    const heartbeat = databaseHeartbeat(db);
    return await whileAnswering(action(db), heartbeat ? [heartbeat] : [], {
      boundMs: ANSWER_MS,
    });
  } catch (error) {
    lost = error instanceof ServiceLostError;
    throw error;
  } finally {
    await closeWithin(db.close(), lost ? 0 : ANSWER_MS);
  }
}

/** The link store the connector uses (DATABASE_URL or DATABASE_PATH), ready to read. */
export async function openStore(config: RuntimeConfig): Promise<Db> {
  const db = openDatabase(databaseTarget(config.env), { poolSize: 2 });
  try {
    await waitForDatabase(db, { logger: pino({ level: "silent" }), giveUpAfterMs: ANSWER_MS });
  } catch (error) {
    await db.close();
    throw error;
  }
  return db;
}

/** The provider that checks credentials, or the line naming how to give one. */
function providerToAsk(config: RuntimeConfig) {
  const endpoints = resolveProviderEndpoints(config);
  if (!endpoints) {
    throw new ConfigError(`${noProviderError(config).message}; or pass --no-verify`);
  }
  return endpoints;
}

/**
 * The provider store `storeId` as the provider describes it, once the credentials have been
 * checked the way the connector will use them (a client-credentials token, then GET /stores/N):
 * a ConfigError with the provider's answer when they do not work or do not cover the store, so
 * nothing wrong is saved (every order would go to the dead-letter queue as `config`).
 */
async function verifiedStore(
  config: RuntimeConfig,
  clientId: string,
  clientSecret: string,
  storeId: number,
  /** The command's open context; one is opened for the check when not given. */
  open?: Core,
): Promise<VerifiedStore> {
  const endpoints = providerToAsk(config);
  const check = (ctx: Core) =>
    verifyProviderCredentials({
      ...endpoints,
      clientId,
      clientSecret,
      environment: "production",
      redis: ctx.redis,
      secrets: ctx.secrets,
      prefix: ctx.prefix,
    });
  const result = await (open ? check(open) : withContext(config, check));
  if (!result.ok) {
    const said = `${result.message.charAt(0).toLowerCase()}${result.message.slice(1)}`;
    throw new ConfigError(`nothing saved: ${said} (--no-verify saves without asking)`);
  }
  const store = result.stores.find((s) => s.storeId === storeId && s.problem === null);
  if (!store) {
    const covered = result.stores.filter((s) => s.problem === null).map((s) => s.storeId);
    throw new ConfigError(
      `nothing saved: these credentials do not give access to provider store ${storeId} (they cover ${covered.join(", ") || "no store"}); check --store-id (--no-verify saves without asking)`,
    );
  }
  return store;
}

/**
 * The currency to save for a verified provider store: the one it keeps, as the settings page
 * saves it. A `--currency` that differs is refused, nothing saved: the worker sends the orders'
 * amounts in the saved currency, and a store keeping another would take them as its own. Null
 * when the provider does not say and none is given.
 */
function currencyOf(store: VerifiedStore, given: string | undefined): string | null {
  const kept = store.currencyCode?.trim().toUpperCase() || null;
  if (kept && given && given.toUpperCase() !== kept) {
    throw new ConfigError(
      `nothing saved: provider store ${store.storeId} keeps ${kept}, not ${given.toUpperCase()} (--currency): amounts in ${given.toUpperCase()} would be sent to a ${kept} store; leave --currency out to take the store's, or give --currency ${kept}`,
    );
  }
  return kept ?? given ?? null;
}

/**
 * `shops add --access-token`: the token exchanged for an expiring pair by the shops' own
 * migration (under the shop's refresh lock) and the pair saved by `save`, never the token given.
 * A token Shopify will not exchange saves nothing and is named with the fix (a ConfigError, exit
 * 2); no answer saves nothing either, in one line (a retry within 7 days gets the same pair).
 */
async function exchangedAndSaved<T>(
  config: RuntimeConfig,
  ctx: Core,
  shop: string,
  token: string,
  save: (columns: ShopSettingsInput) => Promise<T>,
): Promise<T> {
  let answer: { ok: true; saved: T } | { ok: false; status: number; error: string | null };
  // Past the exchange, a failure is the save's own (the database), said as such.
  let exchanged = false;
  try {
    answer = await ctx.shopTokens.adopt(shop, token, (columns) => {
      exchanged = true;
      return save(columns);
    });
  } catch (error) {
    if (exchanged || error instanceof ConfigError || error instanceof ServiceLostError) {
      throw error;
    }
    const local =
      config.env.NODE_ENV !== "production" && !config.env.SHOPIFY_ADMIN_URL
        ? "; locally, set SHOPIFY_ADMIN_URL to the stand-in Shopify (npx connector shopify-standin)"
        : "";
    throw new CommandFailedError(
      `nothing saved: the Shopify token could not be exchanged for an expiring one (${whyNoAnswer(error, token)}): run the command again (Shopify answers the same pair to the same token for 7 days), or add --no-verify to store it as given and have the connector exchange it at its next start or sweep${local}`,
    );
  }
  if (answer.ok) return answer.saved;
  const said = `Shopify answered ${answer.status}${answer.error ? ` ${answer.error}` : ""}`;
  if (answer.error === "invalid_client") {
    throw new ConfigError(
      `nothing saved: Shopify did not accept the app's credentials to exchange the token (${said}): check SHOPIFY_API_KEY (${config.shopifyApiKey}) and SHOPIFY_API_SECRET, the app's client ID and secret`,
    );
  }
  throw new ConfigError(
    `nothing saved: Shopify would not exchange the token for an expiring one (${said}): --access-token must be an offline token of this app (SHOPIFY_API_KEY ${config.shopifyApiKey}) for ${shop}, not yet exchanged; a custom app's or another app's token, a revoked one, or any non-expiring one from 2027-01-01 cannot be used: install the app on the shop instead (${config.appUrl}/shopify/install?shop=${shop})`,
  );
}

/** How recent a worker's heartbeat must be for the worker to count as running (as the alert's). */
const WORKER_SILENT_MS = 90_000;

/** The reconnect's job `shops add` queued (or found queued), and whether a worker runs now. */
interface Reconnect {
  id: string;
  created: boolean;
  workerRunning: boolean;
}

/**
 * Queues what waited for the shop's token (the reconnect's job a worker runs) and says whether a
 * worker runs now, by its heartbeat.
 */
async function queueReconnect(ctx: Core, shop: string): Promise<Reconnect> {
  const queue = new BulkRetryQueue(ctx.redis, ctx.prefix);
  try {
    const job = await queue.reconnected(shop);
    const beats = await readHeartbeats(ctx.redis, ctx.prefix);
    const workerRunning = beats.some(
      (b) => b.role === "worker" && b.at > Date.now() - WORKER_SILENT_MS,
    );
    return { ...job, workerRunning };
  } finally {
    await queue.close();
  }
}

/** Why an exchange got no answer, in a few words and without the token. */
function whyNoAnswer(error: unknown, token: string): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  const why =
    error instanceof HttpResponseError
      ? `Shopify answered ${error.response.code} ${error.response.statusText}`.trim()
      : error instanceof TypeError && error.message === "fetch failed" && cause
        ? `fetch failed: ${cause.code ?? cause.message ?? "no answer"}`
        : (((error as Error)?.message ?? String(error)).split("\n")[0] ?? "");
  return printable(token ? why.split(token).join("…") : why).slice(0, 200);
}

/** What an operator does about one shop's migration: nothing, wait for the merchant, or retry. */
function migrationNote(r: { result: "migrated" | "refused" | "failed"; reason?: string }): string {
  if (r.result === "migrated") return "";
  if (r.result === "refused") {
    return ": Shopify refused the exchange; reconnect needed (the merchant opens the app from the Shopify admin)";
  }
  return `: Shopify's answer did not arrive (${r.reason ?? "no answer"}); each sweep of the shop tries again, or run this command again`;
}
