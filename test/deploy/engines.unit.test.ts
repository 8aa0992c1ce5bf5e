import { readFileSync } from "node:fs";
import { join } from "node:path";
import semver from "semver";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const read = (file: string) => JSON.parse(readFileSync(join(ROOT, file), "utf8"));

// scripts/with-node.mjs runs every command under a Node that package.json's engines admit, so
// the oldest Node those admit must be one every installed package declares it runs on: else
// a machine with that Node runs the connector on packages that say they need a newer one.
describe("package.json's engines", () => {
  it("admit no Node older than any installed package's own engines floor", () => {
    const ours: string = read("package.json").engines.node;
    const oldest = semver.minVersion(ours);
    expect(oldest, ours).not.toBeNull();
    const packages = read("package-lock.json").packages as Record<
      string,
      { engines?: { node?: string } | string[] }
    >;
    const above = Object.entries(packages)
      .filter(([path]) => path !== "")
      .flatMap(([path, entry]) => {
        const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
        if (!range || !semver.validRange(range)) return [];
        return semver.satisfies(oldest as semver.SemVer, range)
          ? []
          : [`${path.replace(/^.*node_modules\//, "")} needs ${range}`];
      });
    expect(above).toEqual([]);
  });
});
