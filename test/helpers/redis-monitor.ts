import { connect } from "node:net";

/** One command in Redis's own log: its name and arguments, and who sent it ("lua" in a script). */
export interface MonitoredCommand {
  args: string[];
  source: string;
}

/**
 * Redis's own log of commands (MONITOR), from the moment this resolves until `stop`, read on a
 * plain socket of its own. Not ioredis's `monitor()`: it enters its monitoring state a microtask
 * after MONITOR's OK, so a command logged in the same read as that OK (on a Redis that other
 * clients keep busy) is taken for the reply to a command it never sent, and it throws "Command
 * queue state error" outside any test.
 */
export function monitorRedis(
  url: string,
  onCommand: (command: MonitoredCommand) => void,
): Promise<{ stop(): void }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.setEncoding("utf8");
  return new Promise((resolve, reject) => {
    let started = false;
    let pending = "";
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.once("error", fail);
    socket.on("data", (chunk: string) => {
      pending += chunk;
      const lines = pending.split("\r\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        if (!started) {
          if (line !== "+OK") return fail(new Error(`MONITOR answered ${line}`));
          started = true;
          socket.off("error", fail);
          // After a stop, or when the server goes away: nothing more to read.
          socket.on("error", () => {});
          resolve({ stop: () => socket.destroy() });
          continue;
        }
        const command = parseLine(line);
        if (command) onCommand(command);
      }
    });
    socket.write("MONITOR\r\n");
  });
}

const ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", a: "\x07", b: "\b" };

/** `+1795767061.073899 [0 127.0.0.1:56050] "set" "key" "value"`, as Redis escapes it. */
function parseLine(line: string): MonitoredCommand | null {
  const match = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$/.exec(line);
  if (!match) return null;
  // Redis escapes every byte that is not printable ASCII (\xNN for each byte of UTF-8 text).
  const args = [...(match[2] as string).matchAll(/"((?:[^"\\]|\\.)*)"/g)].map(([, quoted]) => {
    const bytes = (quoted as string).replace(/\\(x[0-9a-f]{2}|.)/g, (_, escaped: string) =>
      escaped.length === 3
        ? String.fromCharCode(Number.parseInt(escaped.slice(1), 16))
        : (ESCAPES[escaped] ?? escaped),
    );
    return Buffer.from(bytes, "latin1").toString("utf8");
  });
  return { args, source: match[1] as string };
}
