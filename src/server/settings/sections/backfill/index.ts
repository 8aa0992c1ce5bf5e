import type { SettingsSection } from "../section.ts";
import { backfillActions } from "./actions.ts";
import { type BackfillData, BackfillSection } from "./view.tsx";

/** Past orders: sent from a date the merchant picks, with the latest run's progress. */
export const backfill: SettingsSection<BackfillData> = {
  id: "backfill",
  title: "Past orders",
  saved: { backfill: { slot: "backfill", message: "Sending past orders has started." } },
  load: async ({ shop, deps: { service } }) => ({
    backfill: service.backfill ? await service.backfill.latest(shop) : null,
    available: service.backfill !== null,
  }),
  actions: backfillActions,
  View: BackfillSection,
};
