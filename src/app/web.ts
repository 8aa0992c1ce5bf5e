import { listen } from "../lib/listen.ts";
import { createWebApp } from "../server/app.ts";
import { isFirstWebProcess } from "../server/web-cluster.ts";
import type { Connector } from "./connector.ts";

/**
 * The web role: the Hono app (webhooks, install, settings, admin, health) on PORT. One web
 * process of a cluster also runs the start-up chores in the background: migrating non-expiring
 * Shopify tokens, and re-creating missing webhook subscriptions (resyncing the gap).
 */
export async function startWebRole(
  connector: Connector,
): Promise<{ url: string; close(): Promise<void> }> {
  const { config, logger } = connector;
  const web = createWebApp(connector);
  const { server, port } = await listen(web.app.fetch, {
    port: config.env.PORT,
    host: config.host,
    what: "PORT",
  });
  logger.info({ url: config.appUrl, port, pid: process.pid }, "web process listening");
  if (isFirstWebProcess()) {
    // Shops installed before expiring tokens: exchanged in the background (Shopify refuses
    // non-expiring offline tokens from 2027-01-01).
    void connector.shopTokens.migrateAll().then((results) => {
      if (results.length > 0) logger.info({ results }, "non-expiring Shopify tokens migrated");
    });
    // Shopify deletes a subscription after repeated failed deliveries (an outage of ours).
    void connector.installer.checkAllSubscriptions().then((reports) => {
      const repaired = reports.filter((r) => r.created.length > 0);
      logger.info(
        { shops: reports.length, repaired: repaired.map((r) => r.shop) },
        "webhook subscriptions checked",
      );
    });
  }
  return {
    url: `http://${config.host}:${port}`,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await web.close();
    },
  };
}
