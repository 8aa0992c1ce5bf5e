import type { ConnectorContext } from "../../context.ts";

/** What every admin router gets. Routers build their domain objects from the context. */
export interface AdminDeps {
  ctx: ConnectorContext;
}
