import type { Catalog } from "../../../../settings/index.ts";
import type { SectionViewProps } from "../section.ts";

/** Each Shopify location → the provider's fulfillment location ID. */
export function LocationsSection(props: SectionViewProps<Catalog>) {
  const { shop, data: catalog, typed } = props;
  // A refused form shows every value as typed; otherwise the saved ones.
  const shown = (id: string) =>
    typed.locations
      ? (typed.locations[id] ?? "")
      : shop.locationMap[id] !== undefined
        ? String(shop.locationMap[id])
        : "";
  return (
    <section aria-labelledby="locations-title">
      <h2 id="locations-title">{props.title}</h2>
      <p class="hint">
        For each Shopify location that ships orders, the fulfillment location ID your provider gave
        you. Fulfillments from a location without one cannot be sent.
      </p>
      {props.notice("locations")}
      {!catalog.ok ? (
        <p class="notice warning" role="status">
          {catalog.message}
        </p>
      ) : (
        <form method="post" action="/settings/locations">
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Shopify location</th>
                  <th scope="col">Provider fulfillment location ID</th>
                </tr>
              </thead>
              <tbody>
                {catalog.locations.map((location) => (
                  <tr>
                    <td>
                      <label for={`location-${location.id}`} class="plain">
                        {location.name}
                      </label>
                    </td>
                    <td>
                      <input
                        type="number"
                        min="1"
                        step="1"
                        id={`location-${location.id}`}
                        name={`location.${location.id}`}
                        value={shown(location.id)}
                        {...props.invalid(`location-${location.id}`)}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <label for="defaultLocationId">
            Default fulfillment location ID{" "}
            <span class="field-hint">
              (used when Shopify does not say where an order ships from)
            </span>
          </label>
          <input
            type="number"
            min="1"
            step="1"
            id="defaultLocationId"
            name="defaultLocationId"
            value={
              typed.defaultLocationId ??
              (shop.defaultLocationId === null ? "" : String(shop.defaultLocationId))
            }
            {...props.invalid("defaultLocationId")}
          />
          <button type="submit">Save locations</button>
        </form>
      )}
    </section>
  );
}
