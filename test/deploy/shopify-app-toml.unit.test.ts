import { readFileSync } from "node:fs";
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { EnvSchema } from "../../src/config/env.ts";
import { TAG_SCOPE } from "../../src/engine/provider-event-processor.ts";
import { CALLBACK_PATH } from "../../src/server/install/oauth-routes.tsx";
import { APP_SCOPES, OPTIONAL_SCOPES } from "../../src/shopify/api.ts";
import { SUBSCRIBED_TOPICS, TOPICS } from "../../src/shopify/topics.ts";

/**
 * One source of truth: shopify.app.toml (what Shopify CLI deploys), the receiver's topic table
 * and the scopes the code asks for must agree; a topic handled but not subscribed would never
 * arrive, one subscribed but not handled would be answered `ignored` forever.
 */
interface AppToml {
  client_id: string;
  application_url: string;
  embedded: boolean;
  access_scopes: {
    scopes: string;
    optional_scopes?: string[];
    use_legacy_install_flow?: boolean;
  };
  auth: { redirect_urls: string[] };
  webhooks: {
    api_version: string;
    subscriptions: { topics?: string[]; compliance_topics?: string[]; uri: string }[];
  };
}

const toml = parse(
  readFileSync(new URL("../../shopify.app.toml", import.meta.url), "utf8"),
) as unknown as AppToml;

describe("shopify.app.toml", () => {
  it("subscribes exactly the topics the receiver handles, all to the receiver's route", () => {
    const subscribed = toml.webhooks.subscriptions.flatMap((s) => s.topics ?? []);
    expect([...subscribed].sort()).toEqual([...SUBSCRIBED_TOPICS].sort());
    const compliance = toml.webhooks.subscriptions.flatMap((s) => s.compliance_topics ?? []);
    const privacy = Object.entries(TOPICS)
      .filter(([, kind]) => kind === "privacy")
      .map(([topic]) => topic);
    expect([...compliance].sort()).toEqual(privacy.sort());
    for (const s of toml.webhooks.subscriptions) expect(s.uri).toBe("/webhooks/shopify");
  });

  it("asks for exactly the scopes the code asks for at install", () => {
    expect(toml.access_scopes.scopes.split(",").sort()).toEqual([...APP_SCOPES].sort());
  });

  it("lists write_orders as optional, the scope the claims' order tags need, and never requires it", () => {
    expect([...(toml.access_scopes.optional_scopes ?? [])].sort()).toEqual(
      [...OPTIONAL_SCOPES].sort(),
    );
    expect(OPTIONAL_SCOPES).toContain(TAG_SCOPE);
    expect(toml.access_scopes.scopes.split(",")).not.toContain(TAG_SCOPE);
  });

  it("uses the webhook API version and the OAuth callback of the code", () => {
    expect(toml.webhooks.api_version).toBe(EnvSchema.shape.SHOPIFY_API_VERSION.parse(undefined));
    for (const url of toml.auth.redirect_urls) expect(new URL(url).pathname).toBe(CALLBACK_PATH);
    expect(new URL(toml.application_url).protocol).toBe("https:");
  });

  it("is embedded with Shopify-managed installation, which the settings page supports", () => {
    expect(toml.embedded).toBe(true);
    expect(toml.access_scopes.use_legacy_install_flow).toBe(false);
  });
});
