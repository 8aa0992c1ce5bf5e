import type { SectionViewProps } from "../section.ts";

/** How many test orders were not sent (the shop's setting). */
export interface TestOrdersData {
  skipped: number;
}

/** Test orders (Bogus gateway, test mode): kept out of the provider unless the merchant asks. */
export function TestOrdersSection(props: SectionViewProps<TestOrdersData>) {
  const { shop } = props;
  const { skipped } = props.data;
  return (
    <section aria-labelledby="test-orders-title">
      <h2 id="test-orders-title">{props.title}</h2>
      <p class="hint">
        Orders Shopify marks as tests (the Bogus gateway, test mode) are not sent to the provider
        unless you ask for them here. <strong>{skipped}</strong> test{" "}
        {skipped === 1 ? "order was" : "orders were"} not sent.
      </p>
      {props.notice("test-orders")}
      <form method="post" action="/settings/test-orders">
        <label class="choice">
          <input type="checkbox" name="sendTestOrders" value="on" checked={shop.sendTestOrders} />
          Send test orders to the provider too
        </label>
        <button type="submit">Save test orders choice</button>
      </form>
    </section>
  );
}
