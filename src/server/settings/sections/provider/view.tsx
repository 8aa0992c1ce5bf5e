import type { Child } from "hono/jsx";
import type { VerifiedStore } from "../../../../provider/verify-credentials.ts";
import type { ShopRecord } from "../../../../store/index.ts";
import type { SectionViewProps } from "../section.ts";
import { CLIENT_ID_MAX, CLIENT_SECRET_MAX } from "./limits.ts";

/** The stores the saved credentials cover, as last verified; null before any verification. */
export interface ProviderData {
  stores: VerifiedStore[] | null;
}

/** Client ID, secret and environment, verified on save; then the store among those covered. */
export function ProviderSection(props: SectionViewProps<ProviderData>) {
  const { shop, typed } = props;
  const { stores } = props.data;
  const environment =
    typed.environment ?? (shop.providerEnvironment === "staging" ? "staging" : "production");
  const hasSecret = shop.providerClientSecretSealed !== null;
  return (
    <>
      <section aria-labelledby="provider-title">
        <h2 id="provider-title">{props.title}</h2>
        <p class="hint">
          The client ID and secret from your shipping-protection provider account. We check them
          with the provider before saving; the secret is stored encrypted and never shown again.
        </p>
        {props.notice("provider")}
        <form method="post" action="/settings/provider">
          <label for="clientId">Client ID</label>
          <input
            type="text"
            id="clientId"
            name="clientId"
            required
            autocomplete="off"
            maxlength={CLIENT_ID_MAX}
            value={typed.clientId ?? shop.providerClientId ?? ""}
            {...props.invalid("clientId")}
          />
          <label for="clientSecret">
            Client secret{" "}
            {hasSecret ? <span class="field-hint">(leave blank to keep the saved one)</span> : null}
          </label>
          <input
            type="password"
            id="clientSecret"
            name="clientSecret"
            autocomplete="new-password"
            maxlength={CLIENT_SECRET_MAX}
            required={!hasSecret}
            {...props.invalid("clientSecret")}
          />
          <fieldset>
            <legend>Environment</legend>
            <label class="choice">
              <input
                type="radio"
                name="environment"
                value="production"
                checked={environment === "production"}
                {...props.invalid("environment")}
              />
              Production
            </label>
            <label class="choice">
              <input
                type="radio"
                name="environment"
                value="staging"
                checked={environment === "staging"}
              />
              Staging (for testing)
            </label>
          </fieldset>
          <button type="submit">Verify and save</button>
        </form>
      </section>
      <StoreSection
        shop={shop}
        stores={stores}
        notice={props.notice("store")}
        invalid={props.invalid}
      />
    </>
  );
}

function StoreSection(props: {
  shop: ShopRecord;
  stores: VerifiedStore[] | null;
  notice: Child;
  invalid: SectionViewProps<ProviderData>["invalid"];
}) {
  const { shop, stores } = props;
  const firstChoice = stores?.find((s) => s.problem === null)?.storeId;
  return (
    <section aria-labelledby="store-title">
      <h2 id="store-title">Provider store</h2>
      <p class="hint">
        The stores your credentials give access to. Orders are sent to the store you choose, in its
        currency.
      </p>
      {props.notice}
      {stores === null ? (
        <p class="muted">Save valid credentials above to see your stores.</p>
      ) : (
        <form method="post" action="/settings/store">
          <div class="table-wrap">
            <table>
              <caption class="muted">Shop currency: {shop.shopCurrency ?? "unknown"}</caption>
              <thead>
                <tr>
                  <th scope="col">Choose</th>
                  <th scope="col">Store</th>
                  <th scope="col">Currency</th>
                  <th scope="col">Time zone</th>
                </tr>
              </thead>
              <tbody>
                {stores.map((store) => {
                  const mismatch =
                    store.currencyCode !== null &&
                    shop.shopCurrency !== null &&
                    store.currencyCode !== shop.shopCurrency;
                  const id = `store-${store.storeId}`;
                  return (
                    <tr>
                      <td>
                        <input
                          type="radio"
                          id={id}
                          name="storeId"
                          value={String(store.storeId)}
                          checked={shop.storeId === store.storeId}
                          disabled={store.problem !== null}
                          {...(store.storeId === firstChoice ? props.invalid("storeId") : {})}
                        />
                      </td>
                      <td>
                        <label for={id} class="plain">
                          Store {store.storeId}
                        </label>
                        {store.problem ? <span class="muted"> ({store.problem})</span> : null}
                      </td>
                      <td>
                        {store.currencyCode ?? "—"}
                        {mismatch ? (
                          <p class="notice warning" role="status" data-currency-warning>
                            This store uses {store.currencyCode}, your shop uses {shop.shopCurrency}
                            . Orders would be refused or sent in the wrong currency: choose a{" "}
                            {shop.shopCurrency} store.
                          </p>
                        ) : null}
                      </td>
                      <td>{store.ianaTimezone ?? "—"}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          <button type="submit">Use this store</button>
        </form>
      )}
    </section>
  );
}
