import type { Hono } from "hono";
import { parseOrderRef } from "../../../../sync/order-ref.ts";
import type { Env, SettingsRouteDeps } from "../../settings-guard.tsx";
import { formText, type SectionKit } from "../section.ts";

/** Resync of one order, by its name as Shopify shows it. */
export function statusActions(app: Hono<Env>, kit: SectionKit, deps: SettingsRouteDeps) {
  const { service } = deps;
  const resync = { slot: "resync", field: "orderName" };
  app.post("/resync", async (c) => {
    const orderName = formText((await c.req.parseBody()).orderName);
    if (!service.resync) return kit.refuse(c, "Resync is not available.", resync);
    const typed = { orderName };
    // Read as the CLI and the admin API read it: a name, or an ID; text that can be neither (a
    // product's gid, a number below 1) is said to be so, not looked for and answered "no order".
    if (orderName === "" || orderName.length > 64)
      return kit.refuse(c, "Enter the order's name, for example #1001.", { ...resync, typed });
    const order = parseOrderRef(orderName);
    if (!order.ok)
      return kit.refuse(
        c,
        "That is not an order's name or ID: enter the order's name, for example #1001.",
        { ...resync, typed },
      );
    const result = await service.resync.order(c.get("shop"), order.ref);
    if (result.found === 0)
      return kit.refuse(c, `Shopify has no order named ${orderName} in this shop.`, {
        ...resync,
        typed,
      });
    return kit.saved(c, "resync");
  });
}
