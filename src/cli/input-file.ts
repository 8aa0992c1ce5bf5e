import { isUtf8 } from "node:buffer";
import { readFileSync, statSync } from "node:fs";

/** The largest file a command reads (`--file`): read whole into memory, as a string. */
export const MAX_INPUT_FILE_BYTES = 100 * 1024 * 1024;

/** A `--file` the command cannot use, said in one line with the fix (exit 1). */
export class InputFileError extends Error {
  override name = "InputFileError";
}

/**
 * The text of a file given on the command line (`--file`), as UTF-8: a path that is missing, a
 * directory, larger than `maxBytes` or not UTF-8 text is refused in one line naming the path and
 * what to do, before anything is sent. (Read as `utf8` as it was, a directory ended in a bare
 * `EISDIR`, and a Latin-1 file's bytes became U+FFFD silently: the webhook signed and the
 * products imported were not what the file held.)
 */
export function readInputFile(
  path: string,
  options: { option?: string; maxBytes?: number } = {},
): string {
  const { option = "--file", maxBytes = MAX_INPUT_FILE_BYTES } = options;
  let size: number;
  try {
    const stat = statSync(path);
    if (stat.isDirectory()) {
      throw new InputFileError(`${option} ${path} is a directory: give a file`);
    }
    size = stat.size;
  } catch (error) {
    if (error instanceof InputFileError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new InputFileError(`no such file: ${path}`);
    if (code === "EACCES") throw new InputFileError(`permission denied: ${path}`);
    throw error;
  }
  if (size > maxBytes) {
    throw new InputFileError(
      `${option} ${path} is ${megabytes(size)}, more than the ${megabytes(maxBytes)} a command reads: split it into smaller files`,
    );
  }
  const bytes = readFileSync(path);
  if (!isUtf8(bytes)) {
    throw new InputFileError(
      `${option} ${path} is not UTF-8 text (line ${firstBadLine(bytes)}): save it as UTF-8 (in a spreadsheet, "CSV UTF-8")`,
    );
  }
  return bytes.toString("utf8");
}

const megabytes = (bytes: number) => `${Math.ceil(bytes / (1024 * 1024))} MB`;

/** The 1-based number of the first line that is not UTF-8. */
function firstBadLine(bytes: Buffer): number {
  let line = 1;
  let start = 0;
  for (;;) {
    const end = bytes.indexOf(0x0a, start);
    const stop = end === -1 ? bytes.length : end;
    if (!isUtf8(bytes.subarray(start, stop))) return line;
    if (end === -1) return line;
    start = end + 1;
    line++;
  }
}
