/** `extensions.cost` of an Admin GraphQL answer (Shopify's documentation). */
export interface QueryCost {
  requestedQueryCost: number;
  actualQueryCost: number | null;
  throttleStatus: ThrottleStatus;
}

export interface ThrottleStatus {
  maximumAvailable: number;
  currentlyAvailable: number;
  restoreRate: number;
}

/**
 * What this process knows of each shop's cost bucket: the last throttle status Shopify reported
 * and when. Before a query it computes how long to wait so the bucket holds the query's cost
 * (points flow back at restoreRate per second), instead of sending it to be THROTTLED. Other
 * processes spend from the same bucket, so a THROTTLED answer still teaches it the truth.
 */
export class CostThrottle {
  readonly #known = new Map<string, { status: ThrottleStatus; at: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  observe(shop: string, status: ThrottleStatus) {
    this.#known.set(shop, { status, at: this.now() });
  }

  /** Points the bucket should hold now, or null when nothing is known yet. */
  available(shop: string): number | null {
    const known = this.#known.get(shop);
    if (!known) return null;
    const { status, at } = known;
    const restored = ((this.now() - at) / 1000) * status.restoreRate;
    return Math.min(status.maximumAvailable, status.currentlyAvailable + restored);
  }

  /** How long to wait before a query of `cost` points can run without being throttled. */
  waitMs(shop: string, cost: number): number {
    const known = this.#known.get(shop);
    const available = this.available(shop);
    if (!known || available === null || available >= cost) return 0;
    const needed = Math.min(cost, known.status.maximumAvailable) - available;
    return Math.ceil((needed / Math.max(1, known.status.restoreRate)) * 1000);
  }

  /** After a THROTTLED answer: the bucket held `currentlyAvailable`; wait for `cost`. */
  waitAfterThrottle(shop: string, cost: number, status?: ThrottleStatus): number {
    if (status) this.observe(shop, status);
    return Math.max(this.waitMs(shop, cost), status ? 0 : 1_000);
  }
}
