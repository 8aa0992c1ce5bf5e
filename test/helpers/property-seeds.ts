import { randomInt } from "node:crypto";

export interface PropertySeed {
  /** For the test's name: the seed's number, or "random seed". */
  label: string;
  seed: number;
  /** The first fixed seed: the histories the test's coverage checks were written for. */
  regression: boolean;
}

/**
 * The seeds an expensive property test runs with. Every run: its fixed seed (the regression
 * case) and the seeds that once found a bug (`found`, each fixed since), so a run of the suite
 * is repeatable and CI never fails on a history no one can replay. Exploring is asked for:
 * `PROPERTY_SEED=random` adds a new random seed (printed in the test's name and by fast-check
 * on failure), `PROPERTY_SEED=<n>` replays seed n. A seed that finds a bug joins `found` with
 * its fix.
 */
export function propertySeeds(regression: number, found: number[] = []): PropertySeed[] {
  const seeds: PropertySeed[] = [
    { label: `seed ${regression}`, seed: regression, regression: true },
    ...found.map((seed) => ({ label: `seed ${seed}, found a bug`, seed, regression: false })),
  ];
  const asked = process.env.PROPERTY_SEED;
  if (asked === "random") {
    const seed = randomInt(2 ** 31);
    seeds.push({ label: `random seed ${seed}`, seed, regression: false });
  } else if (asked !== undefined && asked !== "") {
    seeds.push({
      label: `seed ${Number(asked)}, replayed`,
      seed: Number(asked),
      regression: false,
    });
  }
  return seeds;
}
