import type { Catalog } from "../../../../settings/index.ts";
import type { SectionViewProps } from "../section.ts";

/** The product variant(s) that mean "this order is protected". */
export function ProtectionSection(props: SectionViewProps<Catalog>) {
  const { shop, data: catalog } = props;
  const chosen = new Set(shop.protectionVariantIds);
  return (
    <section aria-labelledby="protection-title">
      <h2 id="protection-title">{props.title}</h2>
      <p class="hint">
        Tick the variant(s) customers add to buy shipping protection. An order with one of them is
        sent as protected.
      </p>
      {props.notice("protection")}
      {!catalog.ok ? (
        <p class="notice warning" role="status">
          {catalog.message}
        </p>
      ) : (
        <form method="post" action="/settings/protection">
          {catalog.products.map((product) => (
            <fieldset>
              <legend>{product.title}</legend>
              {product.variants.map((variant) => (
                <label class="choice">
                  <input
                    type="checkbox"
                    name="variantIds"
                    value={variant.id}
                    checked={chosen.has(variant.id)}
                  />
                  {variant.title}{" "}
                  <span class="muted">
                    {variant.sku ?? ""} · {variant.price}
                  </span>
                </label>
              ))}
            </fieldset>
          ))}
          <button type="submit">Save protection variants</button>
        </form>
      )}
    </section>
  );
}
