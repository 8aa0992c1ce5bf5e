import { explainFailure } from "../../../../settings/index.ts";
import type { SettingsSection } from "../section.ts";
import { statusActions } from "./actions.ts";
import { type StatusData, StatusSection } from "./view.tsx";

/** Sync status: synced, waiting and failed orders, the latest failures in words; resync. */
export const status: SettingsSection<StatusData> = {
  id: "status",
  title: "Sync status",
  saved: { resync: { slot: "resync", message: "The order was queued for resync." } },
  async load({ shop, deps: { service }, catalog }) {
    const [counted, known] = await Promise.all([service.status(shop), catalog()]);
    // Failures name Shopify locations as the merchant knows them.
    const locationNames = new Map(known.ok ? known.locations.map((l) => [l.id, l.name]) : []);
    return {
      status: {
        ...counted,
        failures: counted.failures.map((f) => ({
          ...f,
          explanation: explainFailure(f.failure ?? f.error, locationNames),
        })),
      },
      resyncAvailable: service.resync !== null,
    };
  },
  actions: statusActions,
  View: StatusSection,
};
