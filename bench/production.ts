/**
 * How the Dockerfile and `npm run start:prod` run a connector process, so that the benches
 * measure what production runs (test/build/production-runtime.unit.test.ts holds both to it):
 *
 * - the V8 heap sized for a service whose live data is small (~40 MB per worker under load): an
 *   8 MB young generation and old space capped at 160 MB;
 * - glibc's malloc held to two arenas. By default it gives each thread that allocates an arena of
 *   its own (V8's helpers, libuv's pool, SQLite); a worker's resident memory outside the V8 heap
 *   grew past 130 MB over 20,000 jobs, and its peak from 199 to 180 MB with two arenas, at no CPU
 *   cost (BENCHMARKS.md, 2026-11-27).
 */
export const PRODUCTION_NODE_FLAGS = ["--max-semi-space-size=8", "--max-old-space-size=160"];
export const PRODUCTION_ENV: Record<string, string> = { MALLOC_ARENA_MAX: "2" };
