import type { Hono } from "hono";
import { parseInstantText } from "../../../../lib/instant.ts";
import type { Env, SettingsRouteDeps } from "../../settings-guard.tsx";
import { formText, type SectionKit } from "../section.ts";
import { progressText } from "./view.tsx";

/** Start sending past orders from a date; the progress the page polls while it runs. */
export function backfillActions(app: Hono<Env>, kit: SectionKit, deps: SettingsRouteDeps) {
  const { service, shops } = deps;
  const { refuse } = kit;

  app.post("/backfill", async (c) => {
    const since = formText((await c.req.parseBody()).since);
    if (!service.backfill) return refuse(c, "Sending past orders is not available.");
    const typed = { since };
    const field = "since";
    // A day of the calendar ("2026-02-30" is none), from midnight UTC.
    const day = /^\d{4}-\d{2}-\d{2}$/.test(since) ? parseInstantText(since) : null;
    if (day === null)
      return refuse(c, "Enter the start date as a date, for example 2026-01-31.", {
        typed,
        field,
      });
    if (day > Date.now()) return refuse(c, "The start date is in the future.", { typed, field });
    const shop = (await shops.getShop(c.get("shop").shop)) ?? c.get("shop");
    if (shop.status !== "active")
      return refuse(
        c,
        "Finish the provider settings above first: past orders are sent once the store is chosen.",
        { typed },
      );
    await service.backfill.start(shop, new Date(`${since}T00:00:00Z`).toISOString());
    return kit.saved(c, "backfill");
  });

  app.get("/backfill/progress", async (c) => {
    const backfill = service.backfill ? await service.backfill.latest(c.get("shop")) : null;
    return c.json({ backfill, text: backfill ? progressText(backfill) : null });
  });
}
