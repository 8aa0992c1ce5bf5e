import type { SettingsSection } from "../../../server/settings/sections/section.ts";
import type { ClaimsView } from "../settings.ts";
import { claimsActions } from "./actions.ts";
import { ClaimsSection } from "./view.tsx";

/** The provider's claims and events; left out where the composition has no Claims section. */
export const claims: SettingsSection<ClaimsView> = {
  id: "claims",
  title: "Claims",
  saved: {
    claimsSecret: {
      slot: "claims",
      message: "Webhook signing secret saved. The provider's events are accepted from now on.",
    },
    claimsTagOn: {
      slot: "claims",
      message: "Shopify orders will be tagged with their claim's status.",
    },
    claimsTagOff: { slot: "claims", message: "Shopify orders will not be tagged." },
  },
  load: async ({ shop, deps }) => (deps.claims ? await deps.claims.view(shop) : null),
  actions: claimsActions,
  View: ClaimsSection,
};
