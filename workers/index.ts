// The worker role's process entry, for hosts that run workers apart from the web process:
// `tsx workers/index.ts` is `connector --role worker` (the bundle: `node dist/main.mjs --role
// worker`). The workers themselves live in src/jobs/; the composition in src/main.ts.
if (!process.argv.includes("--role")) process.argv.push("--role", "worker");
await import("../src/main.ts");
