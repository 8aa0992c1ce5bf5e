import type { Hono } from "hono";
import type { Environment } from "../../../../settings/index.ts";
import type { Env, SettingsRouteDeps } from "../../settings-guard.tsx";
import { formText, type SectionKit } from "../section.ts";
import { CLIENT_ID_MAX, CLIENT_SECRET_MAX } from "./limits.ts";

/** The credentials (verified with the provider before they are saved), then the store. */
export function providerActions(app: Hono<Env>, kit: SectionKit, deps: SettingsRouteDeps) {
  const { service } = deps;
  const { refuse, saved } = kit;

  app.post("/provider", async (c) => {
    const body = await c.req.parseBody();
    const clientId = formText(body.clientId);
    const environment = formText(body.environment);
    // A secret pasted with a space or a line break around it is the same secret.
    const clientSecret = formText(body.clientSecret);
    const typed = { clientId, environment };
    if (clientId === "") return refuse(c, "Enter the client ID.", { typed, field: "clientId" });
    if (clientId.length > CLIENT_ID_MAX)
      return refuse(
        c,
        `The client ID is longer than ${CLIENT_ID_MAX} characters: copy it again from your provider account.`,
        { typed, field: "clientId" },
      );
    if (clientSecret.length > CLIENT_SECRET_MAX)
      return refuse(
        c,
        `The client secret is longer than ${CLIENT_SECRET_MAX} characters: copy it again from your provider account.`,
        { typed, field: "clientSecret" },
      );
    if (environment !== "production" && environment !== "staging")
      return refuse(c, "Choose the production or the staging environment.", {
        typed,
        field: "environment",
      });
    const result = await service.saveCredentials(c.get("shop"), {
      clientId,
      clientSecret,
      environment: environment as Environment,
    });
    if (!result.ok) {
      // A missing secret is about the secret; the provider refusing them, about both values.
      // Credentials that work but cover no store, or a provider that is busy, unreachable or
      // failing, are about neither: no field is marked for a change it does not need.
      const field = result.missingSecret
        ? ["clientSecret"]
        : result.reason === "credentials"
          ? ["clientId", "clientSecret"]
          : [];
      return refuse(c, result.message, { typed, field });
    }
    return saved(c, result.retired ? "providerSwitched" : "provider");
  });

  app.post("/store", async (c) => {
    const storeId = Number(formText((await c.req.parseBody()).storeId));
    const store = { slot: "store", field: "storeId" };
    if (!Number.isSafeInteger(storeId) || storeId <= 0)
      return refuse(c, "Choose a store from the list.", store);
    const result = await service.chooseStore(c.get("shop"), storeId);
    if (!result.ok) return refuse(c, result.message ?? "Choose a store from the list.", store);
    return saved(c, result.retired ? "storeSwitched" : "store");
  });
}
