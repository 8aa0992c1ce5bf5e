import type { OpProvider } from "../../src/engine/op-executor.ts";
import type { ProcessorProvider } from "../../src/engine/sync-processor.ts";

type Method = keyof OpProvider;

/**
 * A provider whose every answer is scripted, for the engine's unit tests: each call takes the
 * next answer queued for its method (a value, an error to throw, or a function of the call's
 * arguments) and is recorded. A call with nothing queued fails the test by name.
 */
export class ScriptedProvider {
  readonly calls: { method: Method; args: unknown[] }[] = [];
  readonly #answers = new Map<Method, unknown[]>();

  answer(method: Method, ...answers: unknown[]): this {
    this.#answers.set(method, [...(this.#answers.get(method) ?? []), ...answers]);
    return this;
  }

  called(method: Method): number {
    return this.calls.filter((c) => c.method === method).length;
  }

  get client(): ProcessorProvider {
    const call =
      (method: Method) =>
      async (...args: unknown[]) => {
        this.calls.push({ method, args });
        const next = this.#answers.get(method)?.shift();
        if (next === undefined) throw new Error(`unscripted call: ${method}`);
        if (next instanceof Error) throw next;
        return typeof next === "function" ? next(...args) : next;
      };
    return {
      baseUrl: "https://provider.test/v1",
      getTokenInfo: async () => ({ token: "t", expiresAt: Date.now() + 3_600_000, scopes: [] }),
      createOrder: call("createOrder"),
      getOrder: call("getOrder"),
      findOrderBySourceId: call("findOrderBySourceId"),
      updateOrder: call("updateOrder"),
      cancelOrder: call("cancelOrder"),
      addLineItem: call("addLineItem"),
      cancelLineItem: call("cancelLineItem"),
      createFulfillment: call("createFulfillment"),
    } as unknown as ProcessorProvider;
  }
}
