import { CREDENTIALS_REFUSED } from "../engine/sync-processor.ts";
import { AWAITING_SETTINGS } from "../shopify/install/index.ts";
import { needsReconnect } from "../shopify/install/shop-tokens.ts";
import type { ShopRecord } from "../store/index.ts";

/**
 * The shop's state as the settings page tells the merchant: what it means for their orders and
 * what to do, in their words. The pause reasons and errors as recorded (which may carry a
 * provider's or Shopify's own error text) are for operators: `connector status` shows them.
 */
export interface ShopStateWords {
  kind: "success" | "warning";
  message: string;
}

export function shopStateInWords(shop: ShopRecord): ShopStateWords {
  if (shop.status === "active")
    return { kind: "success", message: "Orders are syncing to the provider." };
  if (shop.status === "uninstalled") {
    return { kind: "warning", message: "The app was uninstalled from this shop: nothing syncs." };
  }
  const reason = shop.pausedReason ?? "";
  if (reason === AWAITING_SETTINGS) {
    return {
      kind: "warning",
      message:
        "Sync is paused until the provider settings below are complete: client ID, secret and store.",
    };
  }
  if (needsReconnect(reason)) {
    return {
      kind: "warning",
      message:
        "Sync is paused: Shopify no longer lets this app read your orders. Open the app again from your Shopify admin (Apps → Order sync) to reconnect it; orders placed meanwhile are sent then.",
    };
  }
  if (reason.startsWith(CREDENTIALS_REFUSED)) {
    return {
      kind: "warning",
      message:
        "Sync is paused: the provider no longer accepts the saved client ID and secret. Enter them again under Provider connection; orders placed meanwhile are sent once they are accepted.",
    };
  }
  return {
    kind: "warning",
    message: reason ? `Sync is paused: ${reason}.` : "Sync is paused.",
  };
}

/** Shown while Shopify's order webhooks for the shop could not be set up (the error is the operator's). */
export const SUBSCRIPTIONS_FAILING =
  "Shopify is not yet sending this app your orders as they happen: setting that up failed. The app tries again every hour and picks up new orders in those hourly checks meanwhile. If this message stays for a day, contact whoever runs this app for you.";
