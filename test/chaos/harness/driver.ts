import { signWebhook } from "../../../src/cli/webhook-command.ts";
import { sleep } from "./processes.ts";

/** One webhook delivery as Shopify makes it: the same webhook id on every retry. */
export interface WebhookEvent {
  shop: string;
  topic: string;
  body: string;
  webhookId: string;
  eventId: string;
  sourceOrderId: string;
}

export interface DeliveryRecord {
  event: WebhookEvent;
  attempts: number;
  /** Status of every attempt; 0 = no answer (connection refused or reset). */
  statuses: number[];
  /** Every attempt: when it was sent, when it was answered, and the status. */
  timeline: { sentAt: number; at: number; code: number }[];
  /** When the first 200 came back, and when that attempt was sent (epoch ms). */
  ackedAt: number | null;
  ackSentAt: number | null;
}

export interface DriveOptions {
  concurrency: number;
  /** Retry a non-200 like Shopify does (here within seconds, not hours). */
  retry?: boolean;
  retryDelayMs?: number;
  /** Give up on an event after this long (it is then counted as never acknowledged). */
  giveUpAfterMs?: number;
  /** Start at most this many webhooks per second (spreads a run over time for the faults). */
  ratePerSecond?: number;
  /** Deliver each webhook this many times at once (the same webhook id), as Shopify may. */
  copies?: number;
  /** Called before each attempt; lets a scenario pace the load or stop it. */
  beforeEach?: (index: number) => Promise<void> | void;
}

/**
 * Sends signed webhooks over HTTP to the web process, `concurrency` at a time, and records what
 * each attempt got. With `retry`, a 5xx or a dropped connection is retried with the same
 * webhook id until it is answered 200, as Shopify does.
 */
export async function deliver(
  url: () => string,
  secret: string,
  events: WebhookEvent[],
  options: DriveOptions,
): Promise<DeliveryRecord[]> {
  const records: DeliveryRecord[] = events.map((event) => ({
    event,
    attempts: 0,
    statuses: [],
    timeline: [],
    ackedAt: null,
    ackSentAt: null,
  }));
  let next = 0;
  const begin = Date.now();
  const lane = async () => {
    for (;;) {
      const index = next++;
      const record = records[index];
      if (!record) return;
      if (options.ratePerSecond) {
        const due = begin + (index * 1000) / options.ratePerSecond;
        if (due > Date.now()) await sleep(due - Date.now());
      }
      await options.beforeEach?.(index);
      const started = Date.now();
      for (;;) {
        const answers = await Promise.all(
          Array.from({ length: options.copies ?? 1 }, () => sendOnce(url(), secret, record.event)),
        );
        const at = Date.now();
        for (const answer of answers) {
          record.attempts++;
          record.statuses.push(answer.code);
          record.timeline.push({ sentAt: answer.sentAt, at, code: answer.code });
        }
        const acked = answers.find((a) => a.code === 200);
        if (acked) {
          record.ackedAt = at;
          record.ackSentAt = acked.sentAt;
          break;
        }
        if (!options.retry) break;
        if (options.giveUpAfterMs && Date.now() - started > options.giveUpAfterMs) break;
        await sleep(options.retryDelayMs ?? 250);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, lane));
  return records;
}

async function sendOnce(
  url: string,
  secret: string,
  event: WebhookEvent,
): Promise<{ code: number; sentAt: number }> {
  const signed = signWebhook({
    topic: event.topic,
    shop: event.shop,
    body: event.body,
    secret,
    webhookId: event.webhookId,
    eventId: event.eventId,
  });
  const sentAt = Date.now();
  try {
    const response = await fetch(`${url}/webhooks/shopify`, {
      method: "POST",
      headers: signed.headers,
      body: signed.body,
      signal: AbortSignal.timeout(15_000),
    });
    await response.arrayBuffer();
    return { code: response.status, sentAt };
  } catch {
    return { code: 0, sentAt };
  }
}

/** Counts of each status over every attempt. */
export function statusCounts(records: DeliveryRecord[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of records)
    for (const s of r.statuses) counts[String(s)] = (counts[String(s)] ?? 0) + 1;
  return counts;
}
