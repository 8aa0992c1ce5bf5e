import type { Slot, StoreRateLimiter } from "../src/engine/limiter/index.ts";
import { ProviderRateLimitError } from "../src/provider/index.ts";

/**
 * The benchmarks' baseline: what a user would build without a per-store limiter. Every request
 * is allowed; a 429's Retry-After is obeyed by handing the wait back, as `limiter.call` does.
 */
export function noStoreLimiter(): StoreRateLimiter {
  const limiter = {
    async call<T>(_store: number, _priority: string, request: (slot: Slot) => Promise<T>) {
      try {
        return {
          done: true,
          value: await request({ id: "", grantedAtMs: Date.now(), remaining: 1 }),
        };
      } catch (error) {
        if (!(error instanceof ProviderRateLimitError)) throw error;
        const waitMs = error.retryAfterMs ?? 1_000;
        return {
          done: false,
          reason: "rate-limited",
          retryAtMs: Date.now() + waitMs,
          waitMs,
          leadMs: 0,
        };
      }
    },
    providerHooks() {
      return { beforeSend: async () => {}, answered: async () => 0 };
    },
  };
  return limiter as unknown as StoreRateLimiter;
}
