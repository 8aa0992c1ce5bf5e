import { raw } from "hono/html";
import type { BackfillView } from "../../../../settings/index.ts";
import type { ShopRecord } from "../../../../store/index.ts";
import type { SectionViewProps } from "../section.ts";

/** The shop's latest backfill, and whether this installation can start one. */
export interface BackfillData {
  backfill: BackfillView | null;
  available: boolean;
}

const STATUS_WORDS: Record<BackfillView["status"], string> = {
  running: "Reading past orders from Shopify",
  paused: "Paused",
  completed: "Done",
  failed: "Stopped with an error",
};

/** "2026-11-26 08:30 UTC" */
const minute = (iso: string) => `${iso.slice(0, 16).replace("T", " ")} UTC`;

/** The backfill reads orders and queues them; the counts below show them reaching the provider. */
export function progressText(b: BackfillView): string {
  if (b.status === "completed") {
    // Finished: say so, and when, rather than a progress line stuck at 100%.
    const when = b.completedAt ? `, finished ${minute(b.completedAt)}` : "";
    return b.done === 0
      ? `Done: no past orders to send${when}`
      : `Done: all ${b.done} past orders read and queued for sync${when}`;
  }
  const of = b.total === null ? "" : ` of ${b.total}`;
  const pct = b.percent === null ? "" : ` (${b.percent}%)`;
  return `${STATUS_WORDS[b.status]}: ${b.done}${of} orders queued for sync${pct}`;
}

/** Keeps the progress current while a backfill runs (the page works without it: reload). */
const POLL = `
(() => {
  const box = document.getElementById("backfill-progress");
  if (!box || box.dataset.status !== "running") return;
  const bar = box.querySelector("progress");
  const text = document.getElementById("backfill-text");
  const tick = async () => {
    try {
      const res = await fetch("/settings/backfill/progress", { credentials: "same-origin" });
      if (res.ok) {
        const p = await res.json();
        if (p && p.backfill) {
          text.textContent = p.text;
          if (p.backfill.total !== null) { bar.max = p.backfill.total; bar.value = p.backfill.done; }
          box.dataset.status = p.backfill.status;
          if (p.backfill.status !== "running") return;
        }
      }
    } catch {}
    setTimeout(tick, 1000);
  };
  setTimeout(tick, 1000);
})();`;

function defaultSince(shop: ShopRecord): string {
  const from = shop.installedAt ? Date.parse(shop.installedAt) : Date.now();
  return new Date(from - 30 * 86_400_000).toISOString().slice(0, 10);
}

export function BackfillSection(props: SectionViewProps<BackfillData>) {
  const { backfill, available } = props.data;
  return (
    <section aria-labelledby="backfill-title">
      <h2 id="backfill-title">{props.title}</h2>
      <p class="hint">
        Send the orders placed before the app was installed. Orders already sent are not sent twice;
        new orders keep going first.
      </p>
      {props.notice("backfill")}
      {backfill ? (
        <div id="backfill-progress" data-status={backfill.status}>
          <p class="progress-line">
            <progress
              max={backfill.total ?? undefined}
              value={backfill.total === null ? undefined : backfill.done}
              aria-labelledby="backfill-text"
            />
          </p>
          <p id="backfill-text" aria-live="polite">
            {progressText(backfill)}
          </p>
          <p class="muted">
            Orders since {backfill.since?.slice(0, 10) ?? "the beginning"}, started{" "}
            {minute(backfill.startedAt)}.
          </p>
          {backfill.error ? (
            <p class="notice error" role="alert">
              {backfill.error}
            </p>
          ) : null}
          {backfill.warnings.map((w) => (
            <p class="notice warning" role="status">
              {w}
            </p>
          ))}
          <script nonce={props.nonce}>{raw(POLL)}</script>
        </div>
      ) : null}
      {available ? (
        <form method="post" action="/settings/backfill">
          <label for="since">Send orders placed since</label>
          <input
            type="date"
            id="since"
            name="since"
            required
            value={props.typed.since ?? defaultSince(props.shop)}
            {...props.invalid("since")}
          />
          <button type="submit">Start sending past orders</button>
        </form>
      ) : (
        <p class="muted">Sending past orders is not available in this installation.</p>
      )}
    </section>
  );
}
