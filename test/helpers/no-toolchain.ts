import { existsSync, mkdirSync, mkdtempSync, readdirSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

/**
 * What a C/C++ build needs and a fresh machine (or the Dockerfile's `node:24-bookworm-slim`)
 * does not have: compilers, make and Python (node-gyp looks for `python3` and `python`).
 */
const TOOLCHAIN =
  /^(?:.*-)?(?:cc|c\+\+|gcc|g\+\+|clang|clang\+\+)(?:-[\d.]+)?$|^g?make$|^python[\d.]*(?:-config)?$/;

export interface BareMachine {
  /** The one directory on PATH: this machine's programs minus the toolchain. */
  bin: string;
  /** An empty home directory: no ~/.npmrc (here it names a local nodedir), no npm cache. */
  home: string;
  /** The environment to run npm in: nothing of this process's npm_config_* comes along. */
  env: Record<string, string>;
}

/**
 * A machine as a newcomer has it, for installs: an empty HOME, no `npm_config_*` from the parent
 * (no nodedir), and a PATH that has every program of this one except cc, gcc, g++, make and
 * python3 (and their versioned names). `node` on it is the Node running the tests, or `node`.
 * The registry is reached as on this machine: NODE_EXTRA_CA_CERTS and npm's cafile come along.
 * `hide` hides more programs by name.
 */
export function bareMachine(
  root?: string,
  options: { hide?: string[]; node?: string } = {},
): BareMachine {
  const hide = options.hide ?? [];
  const dir = root ?? mkdtempSync(join(tmpdir(), "bare-machine-"));
  const bin = join(dir, "bin");
  const home = join(dir, "home");
  mkdirSync(bin, { recursive: true });
  mkdirSync(home, { recursive: true });
  const taken = new Set<string>(["node"]);
  symlinkSync(options.node ?? process.execPath, join(bin, "node"));
  for (const source of (process.env.PATH ?? "").split(delimiter)) {
    if (!source || !existsSync(source)) continue;
    for (const name of readdirSync(source)) {
      if (taken.has(name) || TOOLCHAIN.test(name) || hide.includes(name)) continue;
      const target = join(source, name);
      try {
        if (!statSync(target).isFile()) continue;
      } catch {
        continue; // a dangling link
      }
      taken.add(name);
      symlinkSync(target, join(bin, name));
    }
  }
  const env: Record<string, string> = {
    PATH: bin,
    HOME: home,
    LANG: process.env.LANG ?? "C.UTF-8",
    TMPDIR: tmpdir(),
  };
  const ca = process.env.NODE_EXTRA_CA_CERTS ?? "/etc/ssl/certs/ca-certificates.crt";
  if (existsSync(ca)) {
    env.NODE_EXTRA_CA_CERTS = ca;
    env.npm_config_cafile = ca;
  }
  return { bin, home, env };
}

/** The toolchain programs `sh` still finds on this PATH (none, on a bare machine). */
export const TOOLCHAIN_PROGRAMS = ["cc", "gcc", "g++", "c++", "make", "python3", "python"];
