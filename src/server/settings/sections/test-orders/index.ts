import type { SettingsSection } from "../section.ts";
import { testOrdersActions } from "./actions.ts";
import { type TestOrdersData, TestOrdersSection } from "./view.tsx";

/** Test orders: kept out of the provider unless the merchant asks, with how many were kept. */
export const testOrders: SettingsSection<TestOrdersData> = {
  id: "test-orders",
  title: "Test orders",
  saved: {
    testOrdersOn: { slot: "test-orders", message: "Test orders will be sent to the provider." },
    testOrdersOff: {
      slot: "test-orders",
      message: "Test orders will not be sent to the provider.",
    },
  },
  load: async ({ shop, deps }) => ({ skipped: await deps.shops.countKeptOut(shop.shop, "test") }),
  actions: testOrdersActions,
  View: TestOrdersSection,
};
