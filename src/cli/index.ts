import { parseEnv } from "../config/env.ts";
import { resolveRuntimeConfig } from "../config/runtime-config.ts";
import { explainCliError } from "./errors.ts";
import { buildProgram, CommanderError, exitCodeOf } from "./program.ts";

const debug = process.env.LOG_LEVEL === "debug" || process.env.LOG_LEVEL === "trace";
let context: { appUrl?: string; production?: boolean } = {};
try {
  const config = resolveRuntimeConfig(parseEnv());
  context = { appUrl: config.appUrl, production: config.env.NODE_ENV === "production" };
  await buildProgram(config).parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // A mistyped command line, or `--help`: commander has printed its one line already.
    process.exitCode = exitCodeOf(error);
  } else {
    // One line naming the cause and the fix; the stack only when asked for.
    if (debug) console.error(error);
    const { line, code } = explainCliError(error, context);
    console.error(line);
    process.exitCode = code;
  }
}
