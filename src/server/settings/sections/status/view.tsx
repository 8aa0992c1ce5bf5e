import type { StatusView } from "../../../../settings/index.ts";
import type { SectionViewProps } from "../section.ts";

/** The counts and latest failures (in words), and whether one order can be resynced. */
export interface StatusData {
  status: StatusView;
  resyncAvailable: boolean;
}

/** Counts, the latest failures in words, and resync of one order. */
export function StatusSection(props: SectionViewProps<StatusData>) {
  const { status, resyncAvailable } = props.data;
  return (
    <section aria-labelledby="status-title">
      <h2 id="status-title">{props.title}</h2>
      <div class="counts">
        <div class="count" data-count="synced">
          <strong>{status.synced}</strong> orders synced
        </div>
        <div class="count" data-count="pending">
          <strong>
            {status.pending}
            {status.pendingAtLeast ? "+" : ""}
          </strong>{" "}
          waiting to sync
        </div>
        <div class="count" data-count="failed">
          <strong>{status.failed}</strong> failed
        </div>
      </div>
      {status.notShipped > 0 ? (
        <p class="hint" data-count="not-shipped">
          <strong>{status.notShipped}</strong>{" "}
          {status.notShipped === 1 ? "order was" : "orders were"} not sent: sold without an address
          to ship to and nothing ships (such as a sale at your shop counter). The provider needs an
          address; add the customer's address to an order in Shopify and it is sent.
        </p>
      ) : null}
      {status.failures.length > 0 ? (
        <>
          <h3>Latest failures</h3>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Order</th>
                  <th scope="col">What went wrong</th>
                  <th scope="col">When (UTC)</th>
                </tr>
              </thead>
              <tbody>
                {status.failures.map((f) => (
                  <tr>
                    <td>{f.order}</td>
                    <td>{f.explanation}</td>
                    <td>{f.when.slice(0, 16).replace("T", " ")}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      ) : (
        <p class="muted">No failed orders.</p>
      )}
      <h3>Resync one order</h3>
      {props.notice("resync")}
      {resyncAvailable ? (
        <form method="post" action="/settings/resync">
          <label for="orderName">
            Order name <span class="field-hint">(as in Shopify, for example #1001)</span>
          </label>
          <input
            type="text"
            id="orderName"
            name="orderName"
            required
            maxlength={64}
            value={props.typed.orderName ?? ""}
            {...props.invalid("orderName")}
          />
          <button type="submit" class="secondary">
            Resync order
          </button>
        </form>
      ) : (
        <p class="muted">Resync is not available in this installation.</p>
      )}
    </section>
  );
}
