import { defineConfig } from "drizzle-kit";

/** Postgres migrations (`DATABASE_URL`), generated from `schema-pg.ts` into drizzle/postgres/. */
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/store/schema-pg.ts",
  out: "./drizzle/postgres",
});
