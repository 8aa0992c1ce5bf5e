import type { Catalog } from "../../../../settings/index.ts";
import type { SettingsSection } from "../section.ts";
import { locationsActions } from "./actions.ts";
import { LocationsSection } from "./view.tsx";

/** Each Shopify location (read from Shopify) → the provider's fulfillment location ID. */
export const locations: SettingsSection<Catalog> = {
  id: "locations",
  title: "Locations",
  saved: { locations: { slot: "locations", message: "Locations saved." } },
  load: (ctx) => ctx.catalog(),
  actions: locationsActions,
  View: LocationsSection,
};
