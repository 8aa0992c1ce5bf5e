import type { Hono } from "hono";
import { formText, type SectionKit } from "../../../server/settings/sections/section.ts";
import type { Env, SettingsRouteDeps } from "../../../server/settings/settings-guard.tsx";

/** The provider's webhook signing secret, and whether claim statuses tag Shopify orders. */
export function claimsActions(app: Hono<Env>, kit: SectionKit, deps: SettingsRouteDeps) {
  const { shops } = deps;
  const { refuse, saved } = kit;

  app.post("/claims/secret", async (c) => {
    if (!deps.claims) return refuse(c, "Claims are not available.");
    const body = await c.req.parseBody();
    const secret = typeof body.webhookSecret === "string" ? body.webhookSecret.trim() : "";
    const shop = (await shops.getShop(c.get("shop").shop)) ?? c.get("shop");
    const result = await deps.claims.saveWebhookSecret(shop, secret, {
      confirmShared: formText(body.confirmShared) === "on",
    });
    if (!result.ok) {
      return refuse(c, result.message, result.field ? { field: result.field } : {});
    }
    return saved(c, "claimsSecret");
  });

  app.post("/claims/tagging", async (c) => {
    if (!deps.claims) return refuse(c, "Claims are not available.");
    const on = formText((await c.req.parseBody()).tagOrders) === "on";
    const shop = (await shops.getShop(c.get("shop").shop)) ?? c.get("shop");
    const result = await deps.claims.setTagging(shop, on);
    if (!result.ok) return refuse(c, result.message);
    return saved(c, on ? "claimsTagOn" : "claimsTagOff");
  });
}
