import { failSpan, startSpan } from "../../lib/tracing.ts";
import type { CallResult, Priority, Slot } from "./store-rate-limiter.ts";

/**
 * The limiter's wait as a span of its own (traces on): from the call into the one door until its
 * slot is granted (the request then runs beside it, under the caller's span), or until the call
 * returns without one (refused, or a 429 to wait out), the reason as its outcome.
 */
export async function traceLimiterWait<T>(
  storeId: number,
  priority: Priority,
  request: (slot: Slot) => Promise<T>,
  call: (request: (slot: Slot) => Promise<T>) => Promise<CallResult<T>>,
): Promise<CallResult<T>> {
  const span = startSpan("limiter wait", {
    attributes: { "connector.provider.store_id": storeId, "connector.priority": priority },
  });
  let open = true;
  const end = (outcome: string) => {
    if (!open) return;
    open = false;
    span.setAttribute("connector.limiter.outcome", outcome);
    span.end();
  };
  try {
    const result = await call((slot) => {
      end("granted");
      return request(slot);
    });
    if (!result.done) end(result.reason);
    return result;
  } catch (error) {
    if (open) failSpan(span, error);
    end("error");
    throw error;
  }
}
