import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import type { Environment } from "../../settings/index.ts";
import { explainFailure } from "../../settings/index.ts";
import { isShopifyId } from "../../shopify/payload-fields.ts";
import { embeddedUrl } from "../install/embedded.ts";
import { progressText } from "./pages/backfill-section.tsx";
import { MessagePage } from "./pages/message-page.tsx";
import { SettingsPage, type SettingsPageProps } from "./pages/settings-page.tsx";
import { registrationRoutes } from "./registrations-routes.tsx";
import { type Env, guardSettings, html, navOf, type SettingsRouteDeps } from "./settings-guard.tsx";

/** Success messages by key (the redirect after a save carries the key, never free text). */
const SAVED: Record<string, { section: string; message: string }> = {
  provider: {
    section: "provider",
    message: "Credentials verified with the provider and saved. Choose your store below.",
  },
  store: { section: "store", message: "Store saved." },
  testOrdersOn: { section: "test-orders", message: "Test orders will be sent to the provider." },
  testOrdersOff: {
    section: "test-orders",
    message: "Test orders will not be sent to the provider.",
  },
  providerSwitched: {
    section: "provider",
    message:
      "Credentials verified and saved for the other environment. Orders already sent to the previous environment stay there untouched; from now on each order is sent to this one the next time it changes. To send past orders now, use “Send past orders” below.",
  },
  storeSwitched: {
    section: "store",
    message:
      "Store saved. Orders already sent to the previous store stay there untouched; from now on each order is sent to this store the next time it changes. To send past orders to this store now, use “Send past orders” below.",
  },
  protection: { section: "protection", message: "Protection variants saved." },
  locations: { section: "locations", message: "Locations saved." },
  backfill: { section: "backfill", message: "Sending past orders has started." },
  resync: { section: "resync", message: "The order was queued for resync." },
  catalog: {
    section: "catalog",
    message: "The file was checked and its products are being imported.",
  },
  claimsSecret: {
    section: "claims",
    message: "Webhook signing secret saved. The provider's events are accepted from now on.",
  },
  claimsTagOn: {
    section: "claims",
    message: "Shopify orders will be tagged with their claim's status.",
  },
  claimsTagOff: { section: "claims", message: "Shopify orders will not be tagged." },
};

/**
 * GET /settings and its forms. Every route needs the shop's session cookie (set by the OAuth
 * callback) and reads the shop from it alone; forms are accepted only from APP_URL's origin
 * (Hono's csrf middleware) and the cookie is SameSite=Lax. Pages carry a strict CSP: scripts
 * and styles only with the response's nonce, forms only to this origin, framed only by the
 * Shopify admin. Embedded in the admin, Shopify's session token stands in for the cookie.
 */
export type { SettingsRouteDeps };

export function settingsRoutes(deps: SettingsRouteDeps) {
  const { service, shops } = deps;
  const app = new Hono<Env>();

  app.onError((error, c) => {
    if (error instanceof HTTPException && error.status === 403) {
      return html(
        c,
        <MessagePage
          title="Form refused"
          message="This form was not sent from the settings page. Reload the page and try again."
        />,
        403,
      );
    }
    deps.logger.error({ err: { message: error.message } }, "settings page failed");
    return c.html("<!doctype html><p>Something went wrong; the error was logged.</p>", 500);
  });

  guardSettings(app, deps);

  const render = async (
    c: Context<Env>,
    extra: Pick<SettingsPageProps, "notice" | "typed"> = {},
    status: 200 | 400 | 413 = 200,
  ) => {
    // Re-read: a save just before the render changed the row.
    const shop = (await shops.getShop(c.get("shop").shop)) ?? c.get("shop");
    const [stores, catalog, counted, backfill, lastImport, claims] = await Promise.all([
      service.verifiedStores(shop.shop),
      service.catalog(shop),
      service.status(shop),
      service.backfill ? service.backfill.latest(shop) : Promise.resolve(null),
      service.catalogImports ? service.catalogImports.latest(shop) : Promise.resolve(null),
      deps.claims ? deps.claims.view(shop) : Promise.resolve(null),
    ]);
    // Failures name Shopify locations as the merchant knows them.
    const locationNames = new Map(catalog.ok ? catalog.locations.map((l) => [l.id, l.name]) : []);
    const statusView = {
      ...counted,
      failures: counted.failures.map((f) => ({
        ...f,
        explanation: explainFailure(f.failure ?? f.error, locationNames),
      })),
    };
    const saved = SAVED[c.req.query("saved") ?? ""];
    const notice = extra.notice ?? (saved ? { kind: "success" as const, ...saved } : undefined);
    return html(
      c,
      <SettingsPage
        shop={shop}
        stores={stores}
        catalog={catalog}
        status={statusView}
        backfill={backfill}
        backfillAvailable={service.backfill !== null}
        testOrdersSkipped={await shops.countSkippedTestOrders(shop.shop)}
        catalogImport={{
          last: lastImport,
          available: service.catalogImports !== null,
          maxBytes: service.catalogImports?.maxBytes ?? 0,
        }}
        claims={claims}
        {...(c.get("embedded")
          ? {
              embedded: {
                apiKey: deps.embedded.apiKey,
                appBridgeUrl: deps.embedded.appBridgeUrl,
                polarisUrl: deps.embedded.polarisUrl,
              },
            }
          : {})}
        nav={navOf(c)}
        resyncAvailable={service.resync !== null}
        {...(notice ? { notice } : {})}
        {...(extra.typed ? { typed: extra.typed } : {})}
        nonce={c.get("secureHeadersNonce") ?? ""}
      />,
      status,
    );
  };
  const refuse = (
    c: Context<Env>,
    section: string,
    message: string,
    typed: SettingsPageProps["typed"] = {},
    status: 400 | 413 = 400,
  ) => render(c, { notice: { kind: "error", message, section }, typed }, status);
  // Inside the admin the page after a save is loaded with the token the form was sent with
  // (Shopify's tokens live a minute; the bounce page fetches a new one for a later reload).
  const saved = (c: Context<Env>, key: string) => {
    const hash = `#${SAVED[key]?.section ?? ""}-title`;
    const embedded = c.get("embedded");
    if (embedded?.host) {
      return c.redirect(
        `${embeddedUrl("/settings", embedded, embedded.token, { saved: key })}${hash}`,
        303,
      );
    }
    return c.redirect(`/settings?saved=${key}${hash}`, 303);
  };
  const text = (v: unknown) => (typeof v === "string" ? v.trim() : "");

  app.get("/", (c) => render(c));

  app.post("/provider", async (c) => {
    const body = await c.req.parseBody();
    const clientId = text(body.clientId);
    const environment = text(body.environment);
    const typed = { clientId, environment };
    if (clientId === "") return refuse(c, "provider", "Enter the client ID.", typed);
    if (environment !== "production" && environment !== "staging")
      return refuse(c, "provider", "Choose the production or the staging environment.", typed);
    const result = await service.saveCredentials(c.get("shop"), {
      clientId,
      clientSecret: typeof body.clientSecret === "string" ? body.clientSecret : "",
      environment: environment as Environment,
    });
    if (!result.ok) return refuse(c, "provider", result.message, typed);
    return saved(c, result.retired ? "providerSwitched" : "provider");
  });

  app.post("/store", async (c) => {
    const storeId = Number(text((await c.req.parseBody()).storeId));
    if (!Number.isSafeInteger(storeId) || storeId <= 0)
      return refuse(c, "store", "Choose a store from the list.");
    const result = await service.chooseStore(c.get("shop"), storeId);
    if (!result.ok) return refuse(c, "store", result.message ?? "Choose a store from the list.");
    return saved(c, result.retired ? "storeSwitched" : "store");
  });

  app.post("/protection", async (c) => {
    const raw = (await c.req.parseBody({ all: true })).variantIds;
    const ids = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).map(text);
    const shop = c.get("shop");
    const result = await service.saveProtectionVariants(shop, ids, await service.catalog(shop));
    if (!result.ok) return refuse(c, "protection", result.message);
    return saved(c, "protection");
  });

  app.post("/test-orders", async (c) => {
    const send = text((await c.req.parseBody()).sendTestOrders) === "on";
    await shops.updateSettings(c.get("shop").shop, { sendTestOrders: send });
    return saved(c, send ? "testOrdersOn" : "testOrdersOff");
  });

  app.post("/locations", async (c) => {
    const body = await c.req.parseBody();
    const map: Record<string, number> = {};
    for (const [key, value] of Object.entries(body)) {
      if (!key.startsWith("location.")) continue;
      const shopifyId = key.slice("location.".length);
      const entered = text(value);
      if (!isShopifyId(shopifyId)) continue;
      if (entered === "") continue;
      const providerId = Number(entered);
      if (!Number.isSafeInteger(providerId) || providerId <= 0)
        return refuse(
          c,
          "locations",
          `Location ${shopifyId}: the provider fulfillment location ID must be a whole number above 0.`,
        );
      map[shopifyId] = providerId;
    }
    const entered = text(body.defaultLocationId);
    const fallback = entered === "" ? null : Number(entered);
    if (fallback !== null && (!Number.isSafeInteger(fallback) || fallback <= 0))
      return refuse(
        c,
        "locations",
        "The default fulfillment location ID must be a whole number above 0.",
      );
    await service.saveLocations(c.get("shop"), map, fallback);
    return saved(c, "locations");
  });

  app.post("/backfill", async (c) => {
    const since = text((await c.req.parseBody()).since);
    if (!service.backfill) return refuse(c, "backfill", "Sending past orders is not available.");
    if (!/^\d{4}-\d{2}-\d{2}$/.test(since) || Number.isNaN(Date.parse(since)))
      return refuse(c, "backfill", "Enter the start date as a date, for example 2026-01-31.", {
        since,
      });
    if (Date.parse(since) > Date.now())
      return refuse(c, "backfill", "The start date is in the future.", { since });
    const shop = (await shops.getShop(c.get("shop").shop)) ?? c.get("shop");
    if (shop.status !== "active")
      return refuse(
        c,
        "backfill",
        "Finish the provider settings above first: past orders are sent once the store is chosen.",
        { since },
      );
    await service.backfill.start(shop, new Date(`${since}T00:00:00Z`).toISOString());
    return saved(c, "backfill");
  });

  app.get("/backfill/progress", async (c) => {
    const backfill = service.backfill ? await service.backfill.latest(c.get("shop")) : null;
    return c.json({ backfill, text: backfill ? progressText(backfill) : null });
  });

  app.post("/resync", async (c) => {
    const orderName = text((await c.req.parseBody()).orderName);
    if (!service.resync) return refuse(c, "resync", "Resync is not available.");
    if (orderName === "" || orderName.length > 64)
      return refuse(c, "resync", "Enter the order's name, for example #1001.", { orderName });
    const result = await service.resync.order(c.get("shop"), orderName);
    if (result.found === 0)
      return refuse(c, "resync", `Shopify has no order named ${orderName} in this shop.`, {
        orderName,
      });
    return saved(c, "resync");
  });

  app.post("/claims/secret", async (c) => {
    if (!deps.claims) return refuse(c, "claims", "Claims are not available.");
    const body = await c.req.parseBody();
    const secret = typeof body.webhookSecret === "string" ? body.webhookSecret.trim() : "";
    const shop = (await shops.getShop(c.get("shop").shop)) ?? c.get("shop");
    const result = await deps.claims.saveWebhookSecret(shop, secret, {
      confirmShared: text(body.confirmShared) === "on",
    });
    if (!result.ok) return refuse(c, "claims", result.message);
    return saved(c, "claimsSecret");
  });

  app.post("/claims/tagging", async (c) => {
    if (!deps.claims) return refuse(c, "claims", "Claims are not available.");
    const on = text((await c.req.parseBody()).tagOrders) === "on";
    const shop = (await shops.getShop(c.get("shop").shop)) ?? c.get("shop");
    const result = await deps.claims.setTagging(shop, on);
    if (!result.ok) return refuse(c, "claims", result.message);
    return saved(c, on ? "claimsTagOn" : "claimsTagOff");
  });

  registrationRoutes(app, deps);
  // A product file: size-capped before it is read, checked at once, imported by the workers.
  const maxBytes = service.catalogImports?.maxBytes ?? 0;
  const tooLarge = `The file is larger than ${Math.round(maxBytes / 1024 / 1024)} MB: split it into smaller files.`;
  app.post(
    "/catalog",
    bodyLimit({
      // The multipart envelope around the file.
      maxSize: maxBytes + 64 * 1024,
      onError: (c) => refuse(c, "catalog", tooLarge, {}, 413),
    }),
    async (c) => {
      const imports = service.catalogImports;
      if (!imports) return refuse(c, "catalog", "Importing products is not available.");
      const body = await c.req.parseBody();
      const file = body.file;
      if (!(file instanceof File) || file.size === 0 || file.name === "") {
        return refuse(c, "catalog", "Choose a .csv or a .json file to upload.");
      }
      if (file.size > maxBytes) return refuse(c, "catalog", tooLarge, {}, 413);
      const shop = (await shops.getShop(c.get("shop").shop)) ?? c.get("shop");
      const result = await imports.upload(shop, {
        name: file.name,
        text: await file.text(),
        skipInvalid: text(body.skipInvalid) === "on",
      });
      if (!result.ok) return refuse(c, "catalog", result.message);
      if (result.view.status === "rejected") {
        return refuse(
          c,
          "catalog",
          "Nothing was imported: fix the rows listed below and upload the file again, or tick “Import the good products and leave out the bad ones”.",
        );
      }
      return saved(c, "catalog");
    },
  );

  return app;
}
