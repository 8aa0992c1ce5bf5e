import type { SettingsSection } from "../section.ts";
import { providerActions } from "./actions.ts";
import { type ProviderData, ProviderSection } from "./view.tsx";

/** Provider connection and store: credentials verified on save, then the store they cover. */
export const provider: SettingsSection<ProviderData> = {
  id: "provider",
  title: "Provider connection",
  saved: {
    provider: {
      slot: "provider",
      message: "Credentials verified with the provider and saved. Choose your store below.",
    },
    providerSwitched: {
      slot: "provider",
      message:
        "Credentials verified and saved for the other environment. Orders already sent to the previous environment stay there untouched; from now on each order is sent to this one the next time it changes. To send past orders now, use “Send past orders” below.",
    },
    store: { slot: "store", message: "Store saved." },
    storeSwitched: {
      slot: "store",
      message:
        "Store saved. Orders already sent to the previous store stay there untouched; from now on each order is sent to this store the next time it changes. To send past orders to this store now, use “Send past orders” below.",
    },
  },
  load: async ({ shop, deps }) => ({ stores: await deps.service.verifiedStores(shop.shop) }),
  actions: providerActions,
  View: ProviderSection,
};
