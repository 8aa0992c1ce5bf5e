import type { ConnectorContext } from "../../context.ts";

/** What every admin router gets. Routers build their domain objects from the context. */
export interface AdminDeps {
  ctx: ConnectorContext;
  /** Registers clean-up for what a router opened (queues, timers); run when the web app closes. */
  onClose?: (close: () => Promise<void>) => void;
}
