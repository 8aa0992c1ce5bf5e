import { misspeltLine, misspeltSettings, parseEnv } from "../config/env.ts";
import { resolveRuntimeConfig } from "../config/runtime-config.ts";
import { cliLine, explainCliError } from "./errors.ts";
import { buildProgram, CommanderError, exitCodeOf } from "./program.ts";

const debug = process.env.LOG_LEVEL === "debug" || process.env.LOG_LEVEL === "trace";
// `connector … | head`: once the reader has gone, the rest of the output has nowhere to go. Stop
// quietly, as `cat` and `git log` do, rather than with Node's "Unhandled 'error' event" and a
// stack; a backfill or an import carries on in the workers and resumes.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    process.stderr.write(
      `${cliLine(`cannot write the output (${error.code ?? error.message})`)}\n`,
    );
    process.exit(1);
  });
}
let context: { appUrl?: string; production?: boolean } = {};
try {
  // Before the settings are read: a setting refused as missing is often one misspelt.
  for (const typo of misspeltSettings()) console.error(cliLine(misspeltLine(typo)));
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
    // A command given up on (a Redis or Postgres that stopped answering) may leave work waiting
    // on a connection that never answers: once its line is out, nothing it does matters. Left to
    // end by itself when it can; the timer does not hold the process.
    setTimeout(() => process.exit(code), 1_000).unref();
  }
}
