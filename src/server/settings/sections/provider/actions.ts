import type { Hono } from "hono";
import type { Environment } from "../../../../settings/index.ts";
import type { Env, SettingsRouteDeps } from "../../settings-guard.tsx";
import { formText, type SectionKit } from "../section.ts";

/** The credentials (verified with the provider before they are saved), then the store. */
export function providerActions(app: Hono<Env>, kit: SectionKit, deps: SettingsRouteDeps) {
  const { service } = deps;
  const { refuse, saved } = kit;

  app.post("/provider", async (c) => {
    const body = await c.req.parseBody();
    const clientId = formText(body.clientId);
    const environment = formText(body.environment);
    const typed = { clientId, environment };
    if (clientId === "") return refuse(c, "Enter the client ID.", { typed });
    if (environment !== "production" && environment !== "staging")
      return refuse(c, "Choose the production or the staging environment.", { typed });
    const result = await service.saveCredentials(c.get("shop"), {
      clientId,
      clientSecret: typeof body.clientSecret === "string" ? body.clientSecret : "",
      environment: environment as Environment,
    });
    if (!result.ok) return refuse(c, result.message, { typed });
    return saved(c, result.retired ? "providerSwitched" : "provider");
  });

  app.post("/store", async (c) => {
    const storeId = Number(formText((await c.req.parseBody()).storeId));
    const store = { slot: "store" };
    if (!Number.isSafeInteger(storeId) || storeId <= 0)
      return refuse(c, "Choose a store from the list.", store);
    const result = await service.chooseStore(c.get("shop"), storeId);
    if (!result.ok) return refuse(c, result.message ?? "Choose a store from the list.", store);
    return saved(c, result.retired ? "storeSwitched" : "store");
  });
}
