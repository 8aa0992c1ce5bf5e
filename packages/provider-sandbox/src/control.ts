import { Hono } from "hono";
import { z } from "zod";
import type { SandboxState } from "./app.ts";
import type { SandboxFaults } from "./faults.ts";
import { addRegistrations } from "./registrations.ts";

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
const RegistrationsBody = z.strictObject({
  storeId: z.number().int().positive(),
  registrations: z
    .array(
      z.strictObject({
        externalId: z.string().min(1),
        customerEmail: z.string().min(1),
        customerName: z.string().optional(),
        channelName: z.string().min(1),
        emailMarketingConsent: z.boolean().optional(),
        lineItems: z
          .array(
            z.strictObject({
              sku: z.string().min(1),
              name: z.string().min(1),
              quantity: z.number().int().positive(),
            }),
          )
          .min(1)
          .optional(),
        createdOn: z.iso.datetime({ offset: true }).optional(),
      }),
    )
    .min(1)
    .max(1_000),
});

export interface SandboxControl {
  state: SandboxState;
  setFaults(faults: SandboxFaults): void;
  consume(storeId: number, count: number): void;
  /** The stores the sandbox serves (registrations are added to one of them). */
  stores: number[];
}

/**
 * `/_sandbox/*`: what a test harness needs when the sandbox runs in its own process (the chaos
 * suite): the whole state (orders with their line items and fulfillments, counters, arrivals),
 * fault settings, budget consumption by "another client" (429 storms), and registrations added
 * as customers would make them. Mounted only with
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
  /** Registrations customers made (what the provider's own forms would record). */
  app.post("/registrations", async (c) => {
    const parsed = RegistrationsBody.safeParse(await c.req.json().catch(() => null));
    if (!parsed.success) return c.json({ error: parsed.error.issues }, 400);
    const { storeId, registrations } = parsed.data;
    if (!control.stores.includes(storeId)) {
      return c.json(
        {
          error: [
            {
              path: ["storeId"],
              message: `not a store of this sandbox (${control.stores.join(", ")})`,
            },
          ],
        },
        400,
      );
    }
    const added = addRegistrations(control.state.registrations, storeId, registrations);
    return c.json({ registrations: added }, 201);
  });
  return app;
}

function withoutUndefined(faults: z.infer<typeof FaultsBody>): SandboxFaults {
  return Object.fromEntries(
    Object.entries(faults).filter(([, v]) => v !== undefined),
  ) as SandboxFaults;
}
