import type { SectionViewProps } from "../../../server/settings/sections/section.ts";
import type { CatalogImportView } from "../../../settings/index.ts";

/** The last product import, whether uploads are possible, and the largest file taken. */
export interface CatalogData {
  last: CatalogImportView | null;
  available: boolean;
  maxBytes: number;
}

const STATUS_TEXT: Record<CatalogImportView["status"], string> = {
  rejected: "Nothing was imported: the file has problems (below).",
  running: "Importing: products are sent as the provider's budget allows, live orders first.",
  interrupted: "The import stopped before the end; it is tried again and resumes by itself.",
  completed: "Import completed.",
};

/**
 * Products outside Shopify (retired, a previous platform's, other channels): a CSV or JSON
 * file is checked and imported to the provider; the last import's counts and bad rows.
 */
export function CatalogSection(props: SectionViewProps<CatalogData>) {
  const { last, available, maxBytes } = props.data;
  return (
    <section aria-labelledby="catalog-title">
      <h2 id="catalog-title">{props.title}</h2>
      <p class="hint">
        Products that are not in this Shopify store (retired products, a previous platform's
        catalog, marketplace or wholesale items) so that returns, exchanges and registrations find
        them. Products of this store must not be uploaded: the provider syncs them itself, and a
        file naming one of their handles or SKUs is refused. The file format is described in the
        connector's <code>docs/products-csv.md</code>.
      </p>
      {props.notice("catalog")}
      {available ? (
        <form method="post" action="/settings/catalog" enctype="multipart/form-data">
          <label for="catalog-file">
            Product file{" "}
            <span class="field-hint">
              (.csv or .json, up to {Math.round(maxBytes / 1024 / 1024)} MB)
            </span>
          </label>
          <input
            id="catalog-file"
            type="file"
            name="file"
            accept=".csv,.json"
            required
            {...props.invalid("catalog-file")}
          />
          <label class="choice">
            <input type="checkbox" name="skipInvalid" value="on" />
            Import the good products and leave out the bad ones
          </label>
          <button type="submit">Check and import</button>
        </form>
      ) : (
        <p class="muted">Importing products is not available in this installation.</p>
      )}
      {last ? <LastImport last={last} /> : null}
    </section>
  );
}

function LastImport(props: { last: CatalogImportView }) {
  const { last } = props;
  const counts: [string, number][] = [
    ["created", last.counts.created],
    ["updated", last.counts.updated],
    ["unchanged", last.counts.unchanged],
    ["invalid", last.counts.invalid],
    ["refused", last.counts.refused],
    ["failed", last.counts.failed],
    ["waiting", last.counts.waiting],
  ];
  return (
    <div id="catalog-last">
      <h3>
        Last import: {last.fileName}, {last.total} {last.total === 1 ? "product" : "products"}
      </h3>
      <p class={last.status === "rejected" ? "notice error" : "muted"}>
        {STATUS_TEXT[last.status]}
        {last.error ? ` (${last.error})` : ""}
      </p>
      <div class="counts">
        {counts.map(([name, n]) => (
          <div class="count" data-count={name}>
            <strong>{n}</strong>
            {name}
          </div>
        ))}
      </div>
      {last.problems.length > 0 ? (
        <div class="table-wrap">
          <table>
            <caption>Rows to fix</caption>
            <thead>
              <tr>
                <th scope="col">Line</th>
                <th scope="col">Field</th>
                <th scope="col">Problem</th>
              </tr>
            </thead>
            <tbody>
              {last.problems.map((p) => (
                <tr>
                  <td>{p.line ?? "file"}</td>
                  <td>{p.field}</td>
                  <td>{p.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </div>
  );
}
