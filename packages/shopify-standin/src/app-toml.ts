import { readFileSync } from "node:fs";
import { parse } from "smol-toml";
import type { AppSubscription } from "./webhook-sender.ts";

/**
 * The app-specific webhook subscriptions of a shopify.app.toml, as Shopify delivers them once
 * `shopify app deploy` has run: each `[[webhooks.subscriptions]]` with `topics`, its `uri`
 * resolved against `application_url` (or `appUrl`, the URL the app really runs at locally).
 * Compliance topics are left out: the stand-in never sends them on its own.
 */
export function appSubscriptionsFromToml(path: string, appUrl?: string): AppSubscription[] {
  const toml = parse(readFileSync(path, "utf8")) as {
    application_url?: string;
    webhooks?: { subscriptions?: { topics?: string[]; uri?: string }[] };
  };
  const base = appUrl ?? toml.application_url;
  if (!base) throw new Error(`${path}: application_url is missing`);
  return (toml.webhooks?.subscriptions ?? [])
    .filter((s) => (s.topics?.length ?? 0) > 0 && typeof s.uri === "string")
    .map((s) => ({ topics: s.topics ?? [], uri: new URL(s.uri ?? "", base).toString() }));
}
