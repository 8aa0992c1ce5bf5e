import { describe, expect, it } from "vitest";
import { checkedSslMode } from "../../src/store/database.ts";

describe("checkedSslMode", () => {
  it("says verify-full for the modes node-postgres checks as verify-full", () => {
    for (const mode of ["prefer", "require", "verify-ca"]) {
      expect(checkedSslMode(`postgres://app:pw@db:5432/connector?sslmode=${mode}`)).toBe(
        "postgres://app:pw@db:5432/connector?sslmode=verify-full",
      );
    }
    expect(
      checkedSslMode("postgres://db/c?sslrootcert=/etc/ca.pem&sslmode=require&application_name=x"),
    ).toBe("postgres://db/c?sslrootcert=/etc/ca.pem&sslmode=verify-full&application_name=x");
  });

  it("leaves every other URL as given", () => {
    for (const url of [
      "postgres://db/c",
      "postgres://db/c?sslmode=verify-full",
      "postgres://db/c?sslmode=no-verify",
      "postgres://db/c?sslmode=disable",
      // libpq's meanings, asked for: node-postgres applies them.
      "postgres://db/c?uselibpqcompat=true&sslmode=require",
      "postgres://db/c?sslmode=require&uselibpqcompat=true",
      // Not the sslmode parameter.
      "postgres://db/c?application_name=sslmode=require",
      "postgres://db/c?sslmode=requirex",
    ]) {
      expect(checkedSslMode(url)).toBe(url);
    }
  });
});
