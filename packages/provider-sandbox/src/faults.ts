/** Fault injection settings; every share is 0..1 and off by default. */
export interface SandboxFaults {
  /** Share of requests answered 500 before anything is written. */
  errorRate?: number;
  /** Share of requests answered only after `slowMs`. */
  slowRate?: number;
  slowMs?: number;
  /** Share of writes whose answer is dropped after the write was committed. */
  dropAfterCommitRate?: number;
  /** Share of requests answered 429 although the budget allows them. */
  extra429Rate?: number;
  /** Seed of the fault dice, so a run can be repeated. */
  seed?: number;
}

/** mulberry32: small, seeded, good enough to decide faults repeatably. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class FaultDice {
  #faults: SandboxFaults = {};
  #random: () => number = seededRandom(1);

  set(faults: SandboxFaults): void {
    this.#faults = { ...faults };
    this.#random = seededRandom(faults.seed ?? 1);
  }

  get settings(): SandboxFaults {
    return this.#faults;
  }

  roll(kind: "errorRate" | "slowRate" | "dropAfterCommitRate" | "extra429Rate"): boolean {
    const share = this.#faults[kind] ?? 0;
    return share > 0 && this.#random() < share;
  }
}
