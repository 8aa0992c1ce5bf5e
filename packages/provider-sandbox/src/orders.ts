import { notFound, SandboxHttpError } from "./http-error.ts";
import {
  type FulfillmentWrite,
  type LineItemWrite,
  type OrderCancel,
  type OrderCreate,
  type OrderUpdate,
  toCents,
} from "./interface.ts";
import type { SandboxFile } from "./sandbox-file.ts";

export interface StoredLineItem extends LineItemWrite {
  orderId: number;
  lineItemId: number;
  createdOn: string;
  updatedOn: string;
}

export interface StoredFulfillment extends FulfillmentWrite {
  fulfillmentId: number;
  createdOn: string;
  updatedOn: string;
}

export interface StoredOrder extends Omit<OrderCreate, "lineItems"> {
  orderId: number;
  lineItems: StoredLineItem[];
  fulfillments: StoredFulfillment[];
  createdOn: string;
  updatedOn: string;
  canceled: boolean;
}

/** Money is stored with 2 decimals (the provider's API reference, 2: extra precision is rounded). */
const money = (v: number) => toCents(v) / 100;
const now = () => new Date().toISOString();

function roundLine<T extends { tax: number; price: number }>(line: T): T {
  return { ...line, tax: money(line.tax), price: money(line.price) };
}

export interface OrderBookOptions {
  protectionVariantIds: (storeId: number) => string[];
  /** Where the book keeps its orders across restarts (none: in memory only). */
  file?: SandboxFile;
}

/** Orders, line items and fulfillments, with the rules of the provider's API reference and our contract. */
export class OrderBook {
  readonly #orders = new Map<number, StoredOrder>();
  /** `storeId:sourceOrderId` → orderId: a create's duplicate check must not scan every order. */
  readonly #bySource = new Map<string, number>();
  #nextOrderId = 10_001;
  #nextLineItemId = 20_001;
  #nextFulfillmentId = 30_001;

  constructor(private readonly options: OrderBookOptions) {
    const saved = options.file?.load();
    if (!saved) return;
    for (const order of saved.orders) {
      this.#orders.set(order.orderId, order);
      this.#bySource.set(`${order.storeId}:${order.sourceOrderId}`, order.orderId);
    }
    this.#nextOrderId = saved.counters.nextOrderId ?? this.#nextOrderId;
    this.#nextLineItemId = saved.counters.nextLineItemId ?? this.#nextLineItemId;
    this.#nextFulfillmentId = saved.counters.nextFulfillmentId ?? this.#nextFulfillmentId;
  }

  /** Writes the order and the ID counters through to the file, when there is one. */
  #save(order: StoredOrder): void {
    this.options.file?.saveOrder(order, {
      nextOrderId: this.#nextOrderId,
      nextLineItemId: this.#nextLineItemId,
      nextFulfillmentId: this.#nextFulfillmentId,
    });
  }

  get all(): StoredOrder[] {
    return [...this.#orders.values()];
  }

  /** How many orders the sandbox holds (benchmarks poll it). */
  get size(): number {
    return this.#orders.size;
  }

  find(storeId: number, sourceOrderId: string): StoredOrder | undefined {
    const orderId = this.#bySource.get(`${storeId}:${sourceOrderId}`);
    return orderId === undefined ? undefined : this.#orders.get(orderId);
  }

  /**
   * Test control: the provider loses one order (its GET and writes answer 404 from now on).
   * Its ID is not handed out again.
   */
  forget(orderId: number): void {
    const order = this.#orders.get(orderId);
    if (!order) return;
    this.#orders.delete(orderId);
    this.#bySource.delete(`${order.storeId}:${order.sourceOrderId}`);
    this.options.file?.deleteOrder(orderId);
  }

  /**
   * Test control: the provider loses everything, counters included, so it hands out the same
   * order IDs again (what a sandbox without persistence did on every restart).
   */
  loseEverything(): void {
    this.#orders.clear();
    this.#bySource.clear();
    this.#nextOrderId = 10_001;
    this.#nextLineItemId = 20_001;
    this.#nextFulfillmentId = 30_001;
    this.options.file?.clear();
  }

  get(orderId: number, storeIds: number[]): StoredOrder {
    const order = this.#orders.get(orderId);
    if (!order || !storeIds.includes(order.storeId)) throw notFound("order");
    return order;
  }

  create(body: OrderCreate): StoredOrder {
    const existing = this.find(body.storeId, body.sourceOrderId);
    if (existing) {
      throw new SandboxHttpError(
        409,
        "duplicate_order",
        `an order with sourceOrderId ${body.sourceOrderId} already exists in store ${body.storeId}`,
        [{ path: "sourceOrderId", message: "already exists" }],
        { existingOrderId: existing.orderId },
      );
    }
    const at = now();
    const orderId = this.#nextOrderId++;
    const { lineItems, ...fields } = body;
    const order: StoredOrder = {
      ...fields,
      orderNumber: body.orderNumber ?? body.sourceOrderId,
      shippingMoney: money(body.shippingMoney),
      subtotalMoney: money(body.subtotalMoney),
      taxMoney: money(body.taxMoney),
      totalMoney: money(body.totalMoney),
      orderId,
      lineItems: lineItems.map((line) => ({
        ...roundLine(line),
        orderId,
        lineItemId: this.#nextLineItemId++,
        createdOn: at,
        updatedOn: at,
      })),
      fulfillments: [],
      createdOn: at,
      updatedOn: at,
      canceled: false,
    };
    order.isShippingProtected = this.#protected(order, body.isShippingProtected);
    this.#orders.set(orderId, order);
    this.#bySource.set(`${order.storeId}:${order.sourceOrderId}`, orderId);
    this.#save(order);
    return order;
  }

  update(order: StoredOrder, body: OrderUpdate): StoredOrder {
    this.#mutable(order);
    const merged = { ...order, ...body };
    // The total rule holds on the order as stored after the update, not only on the body.
    if (
      toCents(merged.totalMoney) !==
      toCents(merged.shippingMoney) + toCents(merged.subtotalMoney) + toCents(merged.taxMoney)
    ) {
      throw new SandboxHttpError(
        400,
        "validation_error",
        "totalMoney must equal shippingMoney + subtotalMoney + taxMoney",
        [
          {
            path: "totalMoney",
            message: "must equal shippingMoney + subtotalMoney + taxMoney (to the cent)",
          },
        ],
      );
    }
    Object.assign(order, body, {
      shippingMoney: money(merged.shippingMoney),
      subtotalMoney: money(merged.subtotalMoney),
      taxMoney: money(merged.taxMoney),
      totalMoney: money(merged.totalMoney),
      updatedOn: now(),
    });
    order.isShippingProtected = this.#protected(
      order,
      body.isShippingProtected ?? order.isShippingProtected,
    );
    this.#save(order);
    return order;
  }

  /** Cancel is idempotent; a canceled order stays readable and becomes immutable. */
  cancel(order: StoredOrder, body: OrderCancel): StoredOrder {
    if (order.canceled) return order;
    order.canceled = true;
    order.sourceCanceledOn = body.sourceCanceledOn ?? now();
    if (body.canceledReason !== undefined) order.canceledReason = body.canceledReason;
    order.updatedOn = now();
    this.#save(order);
    return order;
  }

  addLineItem(order: StoredOrder, body: LineItemWrite): StoredLineItem {
    this.#mutable(order);
    const live = order.lineItems.find(
      (l) => l.sourceLineItemId === body.sourceLineItemId && !l.sourceCanceledOn,
    );
    if (live) {
      throw new SandboxHttpError(
        409,
        "duplicate_line_item",
        `a live line item with sourceLineItemId ${body.sourceLineItemId} exists; cancel it first`,
        [{ path: "sourceLineItemId", message: "already exists" }],
        { existingLineItemId: live.lineItemId },
      );
    }
    const at = now();
    const line: StoredLineItem = {
      ...roundLine(body),
      orderId: order.orderId,
      lineItemId: this.#nextLineItemId++,
      createdOn: at,
      updatedOn: at,
    };
    order.lineItems.push(line);
    order.isShippingProtected = this.#protected(order, order.isShippingProtected);
    order.updatedOn = at;
    this.#save(order);
    return line;
  }

  cancelLineItem(
    order: StoredOrder,
    lineItemId: number,
    sourceCanceledOn: string | undefined,
  ): StoredLineItem {
    const line = order.lineItems.find((l) => l.lineItemId === lineItemId);
    if (!line) throw notFound("line item");
    if (line.sourceCanceledOn) return line;
    this.#mutable(order);
    line.sourceCanceledOn = sourceCanceledOn ?? now();
    line.updatedOn = now();
    order.updatedOn = now();
    this.#save(order);
    return line;
  }

  /** Upsert by sourceFulfillmentId: 201 the first time, 200 with fields replaced afterwards. */
  upsertFulfillment(
    order: StoredOrder,
    body: FulfillmentWrite,
  ): { fulfillment: StoredFulfillment; created: boolean } {
    this.#mutable(order);
    const at = now();
    const existing = order.fulfillments.find(
      (f) => f.sourceFulfillmentId === body.sourceFulfillmentId,
    );
    if (existing) {
      const { fulfillmentId, createdOn } = existing;
      for (const key of Object.keys(existing))
        delete (existing as unknown as Record<string, unknown>)[key];
      Object.assign(existing, body, { fulfillmentId, createdOn, updatedOn: at });
      this.#save(order);
      return { fulfillment: existing, created: false };
    }
    const fulfillment: StoredFulfillment = {
      ...body,
      fulfillmentId: this.#nextFulfillmentId++,
      createdOn: at,
      updatedOn: at,
    };
    order.fulfillments.push(fulfillment);
    this.#save(order);
    return { fulfillment, created: true };
  }

  #mutable(order: StoredOrder): void {
    if (order.canceled) {
      throw new SandboxHttpError(
        409,
        "order_canceled",
        `order ${order.orderId} is canceled and can no longer change`,
      );
    }
  }

  #protected(order: StoredOrder, sent: boolean | undefined): boolean {
    const variants = this.options.protectionVariantIds(order.storeId);
    const byVariant = order.lineItems.some(
      (l) => !l.sourceCanceledOn && l.variantId !== undefined && variants.includes(l.variantId),
    );
    return byVariant || sent === true;
  }
}

/** The Order response shape (the provider's API reference, 2.1). */
export function orderView(order: StoredOrder) {
  const { canceled: _c, fulfillments: _f, ...rest } = order;
  return rest;
}
