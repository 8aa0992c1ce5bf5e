import { claims } from "../../../features/claims/section/index.ts";
import { catalog } from "../../../features/products/section/index.ts";
import { backfill } from "./backfill/index.ts";
import { locations } from "./locations/index.ts";
import { protection } from "./protection/index.ts";
import { provider } from "./provider/index.ts";
import type { SettingsSection } from "./section.ts";
import { status } from "./status/index.ts";
import { testOrders } from "./test-orders/index.ts";

/**
 * The settings page's sections, in page order. A new section is a folder beside these, or a
 * feature's `section/` (its `index.ts` a `SettingsSection`: loader, actions, view), and one
 * line here.
 */
export const SECTIONS: readonly SettingsSection[] = [
  provider,
  protection,
  locations,
  testOrders,
  backfill,
  catalog,
  status,
  claims,
];
