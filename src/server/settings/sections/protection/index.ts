import type { Catalog } from "../../../../settings/index.ts";
import type { SettingsSection } from "../section.ts";
import { protectionActions } from "./actions.ts";
import { ProtectionSection } from "./view.tsx";

/** The product variant(s) that mark an order as protected, picked from the shop's products. */
export const protection: SettingsSection<Catalog> = {
  id: "protection",
  title: "Shipping protection product",
  saved: { protection: { slot: "protection", message: "Protection variants saved." } },
  load: (ctx) => ctx.catalog(),
  actions: protectionActions,
  View: ProtectionSection,
};
