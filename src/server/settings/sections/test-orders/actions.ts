import type { Hono } from "hono";
import type { Env, SettingsRouteDeps } from "../../settings-guard.tsx";
import { formText, type SectionKit } from "../section.ts";

/** Whether test orders are sent to the provider too. */
export function testOrdersActions(app: Hono<Env>, kit: SectionKit, deps: SettingsRouteDeps) {
  app.post("/test-orders", async (c) => {
    const send = formText((await c.req.parseBody()).sendTestOrders) === "on";
    await deps.shops.updateSettings(c.get("shop").shop, { sendTestOrders: send });
    return kit.saved(c, send ? "testOrdersOn" : "testOrdersOff");
  });
}
