import { Presets, SingleBar } from "cli-progress";

/** Where progress goes: stderr, so stdout keeps only a command's result. */
export interface ProgressStream {
  isTTY?: boolean;
  write(text: string): unknown;
}

export interface ProgressOptions<P extends object> {
  /**
   * The bar in a terminal, in cli-progress's format: `{bar}`, `{value}`, `{total}`,
   * `{percentage}`, `{eta_formatted}` and the payload's fields.
   */
  bar: string;
  /** The same progress as one plain line, for a pipe, a log or CI. */
  line(done: number, total: number, payload: P): string;
  /**
   * Plain lines at most once per this many items done, and always at the end (default 1: every
   * change of the line). A long run's log gets a line a step, not one per item.
   */
  every?: number;
  /** How many updates cli-progress averages for its ETA. */
  etaBuffer?: number;
  stream?: ProgressStream;
}

/** A long command's progress: drawn, then stopped once (stop may be called when nothing was). */
export interface Progress<P extends object> {
  update(done: number, total: number, payload: P): void;
  stop(): void;
}

/**
 * One progress display for every long CLI command (a backfill followed, a bulk retry of the
 * dead-letter queue, a product import): a redrawn bar when stderr is a terminal, plain lines on
 * stderr otherwise, so a log or CI shows the run going on and stdout holds only the result.
 */
export function progress<P extends object>(options: ProgressOptions<P>): Progress<P> {
  const stream = options.stream ?? process.stderr;
  if (stream.isTTY) {
    const bar = new SingleBar(
      {
        format: options.bar,
        stream: stream as NodeJS.WritableStream,
        ...(options.etaBuffer ? { etaBuffer: options.etaBuffer } : {}),
      },
      Presets.shades_classic,
    );
    let started = false;
    return {
      update(done, total, payload) {
        if (!started) {
          bar.start(total, done, payload);
          started = true;
          return;
        }
        bar.setTotal(total);
        bar.update(done, payload);
      },
      stop() {
        if (started) bar.stop();
        started = false;
      },
    };
  }
  const every = Math.max(1, options.every ?? 1);
  let last = "";
  let said = 0;
  return {
    update(done, total, payload) {
      const line = options.line(done, total, payload);
      if (line === last) return;
      if (every > 1 && done - said < every && done < total) return;
      stream.write(`${line}\n`);
      last = line;
      said = done;
    },
    stop() {},
  };
}
