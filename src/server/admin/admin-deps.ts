import type { BackfillRepository, ResyncDeps } from "../../backfill/index.ts";
import type { RuntimeConfig } from "../../config/runtime-config.ts";
import type { StatusDeps } from "../../ops/index.ts";

/** What the admin area works on: the status report's and the dead-letter queue's deps, resync's. */
export interface AdminContext extends StatusDeps, ResyncDeps {
  config: RuntimeConfig;
  backfills: BackfillRepository;
}

/** What every admin router gets. */
export interface AdminDeps {
  ctx: AdminContext;
  /** Registers clean-up for what a router opened (queues, timers); run when the web app closes. */
  onClose?: (close: () => Promise<void>) => void;
}
