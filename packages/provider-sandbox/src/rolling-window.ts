/**
 * An exact rolling window counted at arrival: a request is admitted when fewer than `limit`
 * admitted requests arrived in the last `windowMs`. Rejected requests do not count.
 */
export class RollingWindow {
  readonly #arrivals = new Map<string, number[]>();

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  #live(key: string, now: number): number[] {
    const list = this.#arrivals.get(key) ?? [];
    let drop = 0;
    while (drop < list.length && (list[drop] as number) <= now - this.windowMs) drop++;
    const live = drop > 0 ? list.slice(drop) : list;
    this.#arrivals.set(key, live);
    return live;
  }

  /** Admits one arrival or not; the answer carries what the RateLimit-* headers say. */
  admit(key: string, now: number): { admitted: boolean; remaining: number; resetMs: number } {
    const live = this.#live(key, now);
    const admitted = live.length < this.limit;
    if (admitted) live.push(now);
    const oldest = live[0];
    return {
      admitted,
      remaining: Math.max(0, this.limit - live.length),
      resetMs: oldest === undefined ? 0 : Math.max(0, oldest + this.windowMs - now),
    };
  }

  /** Usage by another client sharing the budget (out of band). */
  consume(key: string, count: number, now: number): void {
    const live = this.#live(key, now);
    for (let i = 0; i < count; i++) live.push(now);
  }

  used(key: string, now: number): number {
    return this.#live(key, now).length;
  }
}
