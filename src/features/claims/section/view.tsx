import { raw } from "hono/html";
import type { SectionViewProps } from "../../../server/settings/sections/section.ts";
import type { ClaimsView } from "../settings.ts";

const KIND_WORDS = { claim: "Claim", shipping_claim: "Shipping claim" } as const;
const when = (iso: string) => iso.slice(0, 16).replace("T", " ");

/**
 * Inside the Shopify admin: asks Shopify for the optional write_orders scope (App Bridge's
 * Scopes API opens Shopify's own approval dialog), then sends the tagging form.
 */
const REQUEST_SCOPE = `
document.querySelectorAll("[data-request-scopes]").forEach((button) => {
  button.addEventListener("click", async () => {
    const scopes = button.dataset.requestScopes.split(",");
    const answer = await shopify.scopes.request(scopes);
    if (answer && answer.result === "granted-all") {
      const form = document.getElementById("claims-tagging");
      form.querySelector('input[name="tagOrders"]').checked = true;
      form.requestSubmit();
    }
  });
});`;

/**
 * The provider's claims: the webhook signing secret (per provider account), the shop's claims
 * and shipping claims at their latest status, events the app did not recognise, and the
 * `protection-claim:<status>` order tags (off unless the merchant turns them on).
 */
export function ClaimsSection(props: SectionViewProps<ClaimsView>) {
  const view = props.data;
  return (
    <section aria-labelledby="claims-title">
      <h2 id="claims-title">{props.title}</h2>
      <p class="hint">
        Claims and shipping claims your customers open with the provider, as the provider reports
        them to this app. In your provider account, send webhooks to <code>{view.webhookUrl}</code>{" "}
        and enter the signing secret it shows below.
      </p>
      {props.notice("claims")}
      {view.account === null ? (
        <p class="muted">Save your provider credentials above first.</p>
      ) : (
        <form method="post" action="/settings/claims/secret">
          <p class="muted" data-webhook-secret={view.hasSecret ? "saved" : "missing"}>
            {view.hasSecret
              ? `A signing secret is saved for client ID ${view.account.clientId} (stored encrypted).`
              : "No signing secret yet: the provider's events are refused until you enter it."}
          </p>
          {view.sharedWith > 0 ? (
            <p class="field-hint" data-shared-with={view.sharedWith}>
              This provider account is used by{" "}
              {view.sharedWith === 1 ? "1 other shop" : `${view.sharedWith} other shops`} in this
              app: they share its signing secret, and a new one here replaces it for them too.
            </p>
          ) : null}
          <label for="webhookSecret">
            Webhook signing secret{" "}
            {view.hasSecret ? (
              <span class="field-hint">(enter a new one to replace it)</span>
            ) : null}
          </label>
          <input
            type="password"
            id="webhookSecret"
            name="webhookSecret"
            autocomplete="new-password"
            required
            {...props.invalid("webhookSecret")}
          />
          {view.hasSecret && view.sharedWith > 0 ? (
            <label class="choice">
              <input
                type="checkbox"
                id="confirmShared"
                name="confirmShared"
                value="on"
                {...props.invalid("confirmShared")}
              />
              Replace it for every shop on this account (
              {view.sharedWith === 1
                ? "this shop and 1 other"
                : `this shop and ${view.sharedWith} others`}
              )
            </label>
          ) : null}
          <button type="submit">Save secret</button>
        </form>
      )}
      <form method="post" action="/settings/claims/tagging" id="claims-tagging">
        <label class="choice">
          <input type="checkbox" name="tagOrders" value="on" checked={view.tagOrders} />
          Tag Shopify orders with <code>protection-claim:&lt;status&gt;</code>
        </label>
        {view.canTag ? null : (
          <p class="field-hint" data-needs-scope="write_orders">
            Needs Shopify's write_orders permission, which this shop has not granted the app.
            {props.embedded
              ? " Choose “Allow order tagging”: Shopify asks you to approve it."
              : " Open the app from your Shopify admin and choose “Allow order tagging” there."}
          </p>
        )}
        <button type="submit">Save order tagging</button>
        {props.embedded && !view.canTag ? (
          <button type="button" data-request-scopes="write_orders">
            Allow order tagging
          </button>
        ) : null}
      </form>
      {props.embedded && !view.canTag ? (
        <script nonce={props.nonce}>{raw(REQUEST_SCOPE)}</script>
      ) : null}
      {view.claims.length > 0 ? (
        <div class="table-wrap">
          <table data-claims>
            <thead>
              <tr>
                <th scope="col">Claim</th>
                <th scope="col">Status</th>
                <th scope="col">Order</th>
                <th scope="col">Updated (UTC)</th>
              </tr>
            </thead>
            <tbody>
              {view.claims.map((claim) => (
                <tr data-claim={`${claim.kind}:${claim.claimId}`}>
                  <td>
                    {KIND_WORDS[claim.kind]} {claim.externalId ?? claim.claimId}
                  </td>
                  <td>
                    {claim.status ?? "—"}
                    {claim.tagError ? (
                      <span class="muted"> (order not tagged: {claim.tagError})</span>
                    ) : null}
                  </td>
                  <td>
                    {claim.sourceOrderId
                      ? (claim.orderName ?? claim.sourceOrderId)
                      : `not linked${claim.orderName ? ` (${claim.orderName})` : ""}`}
                  </td>
                  <td>{when(claim.updatedOn)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="muted">No claims reported yet.</p>
      )}
      {view.otherEvents.length > 0 ? (
        <>
          <h3>Other events from the provider</h3>
          <p class="hint">Kept as received; this app does not act on them.</p>
          <div class="table-wrap">
            <table data-other-events>
              <thead>
                <tr>
                  <th scope="col">Topic</th>
                  <th scope="col">Received (UTC)</th>
                  <th scope="col">Note</th>
                </tr>
              </thead>
              <tbody>
                {view.otherEvents.map((event) => (
                  <tr data-event={event.eventId}>
                    <td>{event.topic ?? "(none)"}</td>
                    <td>{when(event.receivedAt)}</td>
                    <td>{event.outcome ?? "waiting to be read"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      ) : null}
    </section>
  );
}
