/**
 * Shopify's cost-based leaky bucket for one app on one shop (Shopify's documentation): a query may run
 * only when the bucket holds its requested cost; points flow back at `restoreRate` per second up
 * to `maximumAvailable`. The difference between requested and actual cost is refunded.
 */
export interface ThrottleStatus {
  maximumAvailable: number;
  currentlyAvailable: number;
  restoreRate: number;
}

export class CostBucket {
  private available: number;
  private at: number;

  constructor(
    readonly maximumAvailable: number,
    readonly restoreRate: number,
    private readonly now: () => number = Date.now,
  ) {
    this.available = maximumAvailable;
    this.at = now();
  }

  private refill() {
    const t = this.now();
    this.available = Math.min(
      this.maximumAvailable,
      this.available + ((t - this.at) / 1000) * this.restoreRate,
    );
    this.at = t;
  }

  /** Takes `cost` points if the bucket holds them; false means THROTTLED. */
  take(cost: number): boolean {
    this.refill();
    if (cost > this.available) return false;
    this.available -= cost;
    return true;
  }

  refund(points: number) {
    this.refill();
    this.available = Math.min(this.maximumAvailable, this.available + points);
  }

  /** Empties the bucket by `points` (another app of the same shop, or a test). */
  drain(points: number) {
    this.refill();
    this.available = Math.max(0, this.available - points);
  }

  status(): ThrottleStatus {
    this.refill();
    return {
      maximumAvailable: this.maximumAvailable,
      currentlyAvailable: Math.floor(this.available),
      restoreRate: this.restoreRate,
    };
  }
}
