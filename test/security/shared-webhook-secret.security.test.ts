import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sealedFor } from "../../src/lib/secret-box.ts";
import {
  type CookieJar,
  type InstallHarness,
  startInstallHarness,
} from "../helpers/install-harness.ts";

/**
 * Issue 31, weakness 3: the provider's webhook secret belongs to a provider account, and every
 * shop on that account shares it; a secret saved on one shop silently replaced it for all of
 * them. The settings page now says how many other shops share it, and replacing a saved secret
 * they share needs an explicit confirmation field; without it nothing changes and the answer
 * says why.
 */
const PROVIDER = { clientId: "shared-client", clientSecret: "shared-secret-4f9a1c" };
const FIRST = "first-shop.myshopify.com";
const SECOND = "second-shop.myshopify.com";
const SECRET_A = "whsec_first_shop_secret_0001";
const SECRET_B = "whsec_second_shop_secret_002";

let h: InstallHarness;
let first: CookieJar;
let second: CookieJar;
beforeAll(async () => {
  h = await startInstallHarness({ provider: { ...PROVIDER, stores: [1001, 1002] } });
  ({ jar: first } = await h.install(FIRST));
  ({ jar: second } = await h.install(SECOND));
  for (const jar of [first, second]) {
    const saved = await h.postForm(
      "/settings/provider",
      { ...PROVIDER, environment: "production" },
      jar,
    );
    expect(saved.status).toBe(303);
  }
}, 60_000);
afterAll(() => h.close());

/** The webhook secret the account holds now, opened. */
async function storedSecret(): Promise<string | null> {
  const account = { providerBaseUrl: h.provider.url, clientId: PROVIDER.clientId };
  const sealed = await h.ctx.webhookSecrets.get(account);
  return sealed
    ? h.ctx.secrets.open(
        sealed,
        sealedFor.providerWebhookSecret(account.providerBaseUrl, account.clientId),
      )
    : null;
}

describe("a provider webhook secret shared by several shops", () => {
  it("tells each shop how many other shops share the account", async () => {
    const page = await (await h.get("/settings", first)).text();
    expect(page).toContain('data-shared-with="1"');
    expect(page).toContain("This provider account is used by 1 other shop in this app");
  });

  it("sets a first secret without asking, then refuses to replace it without the confirmation", async () => {
    const set = await h.postForm("/settings/claims/secret", { webhookSecret: SECRET_A }, first);
    expect(set.status).toBe(303);
    expect(await storedSecret()).toBe(SECRET_A);

    const page = await (await h.get("/settings", second)).text();
    expect(page).toContain('name="confirmShared"');

    const refused = await h.postForm(
      "/settings/claims/secret",
      { webhookSecret: SECRET_B },
      second,
    );
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain(
      "Nothing was changed: this signing secret belongs to provider account shared-client, which 1 other shop uses too.",
    );
    expect(await storedSecret()).toBe(SECRET_A);

    const confirmed = await h.postForm(
      "/settings/claims/secret",
      { webhookSecret: SECRET_B, confirmShared: "on" },
      second,
    );
    expect(confirmed.status).toBe(303);
    expect(await storedSecret()).toBe(SECRET_B);
  });
});
