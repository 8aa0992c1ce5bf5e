import { randomInt } from "node:crypto";

export interface PropertySeed {
  /** For the test's name: the fixed seed's number, or "random seed". */
  label: string;
  seed: number;
  /** The fixed seed: the histories the test's coverage checks were written for. */
  regression: boolean;
}

/**
 * The seeds an expensive property test runs with: its fixed seed, kept as the regression case,
 * and a new random one on every run, so that each run also tries histories no run tried before.
 * When a property fails, fast-check names the seed and the path of the failing case; running
 * with `PROPERTY_SEED=<seed>` replays that seed as the random one.
 */
export function propertySeeds(regression: number): PropertySeed[] {
  const replay = process.env.PROPERTY_SEED;
  const random = replay === undefined || replay === "" ? randomInt(2 ** 31) : Number(replay);
  return [
    { label: `seed ${regression}`, seed: regression, regression: true },
    { label: "random seed", seed: random, regression: false },
  ];
}
