import type { SettingsSection } from "../../../server/settings/sections/section.ts";
import { catalogActions } from "./actions.ts";
import { type CatalogData, CatalogSection } from "./view.tsx";

/** Products outside Shopify: a CSV or JSON file checked and imported; the last import. */
export const catalog: SettingsSection<CatalogData> = {
  id: "catalog",
  title: "Catalog outside Shopify",
  saved: {
    catalog: {
      slot: "catalog",
      message: "The file was checked and its products are being imported.",
    },
  },
  load: async ({ shop, deps: { service } }) => ({
    last: service.catalogImports ? await service.catalogImports.latest(shop) : null,
    available: service.catalogImports !== null,
    maxBytes: service.catalogImports?.maxBytes ?? 0,
  }),
  actions: catalogActions,
  View: CatalogSection,
};
