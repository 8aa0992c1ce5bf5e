import type { Hono } from "hono";
import type { Env, SettingsRouteDeps } from "../../settings-guard.tsx";
import { formText, type SectionKit } from "../section.ts";

/** The variants ticked, each one of the shop's (read from Shopify again to check). */
export function protectionActions(app: Hono<Env>, kit: SectionKit, deps: SettingsRouteDeps) {
  const { service } = deps;
  app.post("/protection", async (c) => {
    const raw = (await c.req.parseBody({ all: true })).variantIds;
    const ids = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).map(formText);
    const shop = c.get("shop");
    const result = await service.saveProtectionVariants(shop, ids, await service.catalog(shop));
    if (!result.ok) return kit.refuse(c, result.message);
    return kit.saved(c, "protection");
  });
}
