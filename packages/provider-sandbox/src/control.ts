import { Hono } from "hono";
import { z } from "zod";
import type { SandboxState } from "./app.ts";
import type { SandboxFaults } from "./faults.ts";

const Share = z.number().min(0).max(1);
export const FaultsBody = z.strictObject({
  errorRate: Share.optional(),
  slowRate: Share.optional(),
  slowMs: z.number().int().nonnegative().optional(),
  dropAfterCommitRate: Share.optional(),
  extra429Rate: Share.optional(),
  seed: z.number().int().optional(),
});
const ConsumeBody = z.strictObject({
  storeId: z.number().int().positive(),
  count: z.number().int().positive(),
});

export interface SandboxControl {
  state: SandboxState;
  setFaults(faults: SandboxFaults): void;
  consume(storeId: number, count: number): void;
}

/**
 * `/_sandbox/*`: what a test harness needs when the sandbox runs in its own process (the chaos
 * suite): the whole state (orders with their line items and fulfillments, counters, arrivals),
 * fault settings, and budget consumption by "another client" (429 storms). Mounted only with
 * `connector sandbox --control`; it is a local test service, never the real provider.
 */
export function sandboxControlRoutes(control: SandboxControl) {
  const app = new Hono();
  app.get("/state", (c) => {
    const { state } = control;
    return c.json({
      orders: state.orders.all,
      counters: state.counters,
      arrivals: state.arrivals,
    });
  });
  app.put("/faults", async (c) => {
    const parsed = FaultsBody.safeParse(await c.req.json().catch(() => null));
    if (!parsed.success) return c.json({ error: parsed.error.issues }, 400);
    control.setFaults(withoutUndefined(parsed.data));
    return c.json({ ok: true });
  });
  app.post("/consume", async (c) => {
    const parsed = ConsumeBody.safeParse(await c.req.json().catch(() => null));
    if (!parsed.success) return c.json({ error: parsed.error.issues }, 400);
    control.consume(parsed.data.storeId, parsed.data.count);
    return c.json({ ok: true });
  });
  return app;
}

function withoutUndefined(faults: z.infer<typeof FaultsBody>): SandboxFaults {
  return Object.fromEntries(
    Object.entries(faults).filter(([, v]) => v !== undefined),
  ) as SandboxFaults;
}
