import { describe, expect, it } from "vitest";
import { UnknownShopError } from "../../src/cli/arguments.ts";
import { CommandFailedError, cliLine, explainCliError } from "../../src/cli/errors.ts";
import { ConfigError } from "../../src/config/env.ts";
import { ServiceLostError } from "../../src/lib/outage.ts";

describe("the CLI's refusal and failure lines", () => {
  it("start with `connector: ` once, whatever error they explain", () => {
    // Before: a ConfigError (a setting, an unknown shop, `shops update --remove-location` of a
    // location not in the map) and a lost Redis or Postgres were printed without it.
    const refused = Object.assign(new Error("connect ECONNREFUSED"), {
      code: "ECONNREFUSED",
      address: "127.0.0.1",
      port: 6379,
    });
    for (const [error, line, code] of [
      [
        new ConfigError("--remove-location: 777 is not in the location map (4001)"),
        "connector: --remove-location: 777 is not in the location map (4001)",
        2,
      ],
      [
        new UnknownShopError("nope.myshopify.com"),
        "connector: no shop nope.myshopify.com here: `connector shops list` shows the shops; install the app on it, or register it with `connector shops add --shop nope.myshopify.com …`",
        2,
      ],
      [
        new ServiceLostError("REDIS_URL redis://r:6379 stopped answering during the command"),
        "connector: REDIS_URL redis://r:6379 stopped answering during the command",
        1,
      ],
      [new CommandFailedError("nothing saved: x"), "connector: nothing saved: x", 1],
      [
        refused,
        "connector: nothing answers at 127.0.0.1:6379 (is the connector running? check REDIS_URL and APP_URL, or the command's --url)",
        1,
      ],
      [new Error("boom"), "connector: boom (LOG_LEVEL=debug shows the stack)", 1],
    ] as const) {
      expect(explainCliError(error), line).toEqual({ line, code });
    }
  });

  it("adds the prefix to a message that lacks it, and never twice", () => {
    expect(cliLine("give an entry ID or --all, not both")).toBe(
      "connector: give an entry ID or --all, not both",
    );
    expect(cliLine("connector: already said so")).toBe("connector: already said so");
  });
});
