// The import rules of src/ (npm run check). ARCHITECTURE.md draws the same layers.
//
// Folders are layers, lowest first. A module imports only from its own folder or from a lower
// layer: a newcomer can follow a webhook from folder to folder downward, never back up.
// Folders of one layer do not import each other.
//
// A feature (src/features/<feature>/: claims, products, registrations) is one vertical slice in
// one folder. There a file's role, its name, puts it in a layer, and the same rules hold inside
// the folder: a feature's repository.ts is in the store layer and never imports its section/.
// Any other file of a feature is a domain file (the feature's own logic: reader, importer, file
// parsing, view model, its barrel index.ts), in the layer beside backfill/.
const ROLES = {
  store: ["repository.ts"],
  settings: ["settings.ts"],
  server: ["routes.tsx", "page.tsx", "section/"],
  jobs: ["worker.ts"],
  app: ["compose.ts"],
  cli: ["command.ts"],
};
const DOMAIN = "features";

const LAYERS = [
  ["config"],
  ["lib"],
  ["provider"],
  ["sync"],
  ["store"],
  ["shopify"],
  ["queue"],
  ["ingest"],
  ["engine"],
  // backfill/: the Admin API walk of a shop's orders; features: the domain files of the slices.
  ["backfill", DOMAIN],
  // settings/: what the settings page reads and changes (verified credentials, the store and
  // its links, the shop's catalog, sync status); server/settings/ is its HTTP side.
  ["lifecycle", "settings"],
  ["metrics"],
  ["ops"],
  ["server", "jobs"],
  // The composition roots: app/ builds each role, cli/ is the CLI role's commands.
  ["app", "cli"],
];

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const FEATURE = "^src/features/[^/]+/";
const role = (file) => `${FEATURE}${escape(file)}${file.endsWith("/") ? "" : "$"}`;
const ROLE_FILES = Object.values(ROLES).flat();
/** A feature's file that has no role: a domain file. */
const domain = `${FEATURE}(?!(${ROLE_FILES.map((file) => `${escape(file)}${file.endsWith("/") ? "" : "$"}`).join("|")}))`;

/** The paths of one member of a layer: its folder and the feature files of its role. */
const paths = (name) =>
  name === DOMAIN ? [domain] : [`^src/${name}/`, ...(ROLES[name] ?? []).map(role)];
const all = (names) => names.flatMap(paths);

const layerRules = LAYERS.flatMap((layer, i) => {
  const above = LAYERS.slice(i + 1).flat();
  const rules = [];
  if (above.length > 0) {
    rules.push({
      name: `no-upward-from-${layer.join("-")}`,
      comment: `${layer.join(", ")} is below ${above.join(", ")}: it must not import them`,
      severity: "error",
      from: { path: all(layer) },
      to: { path: [...all(above), "^src/main\\.ts$"] },
    });
  }
  for (const name of layer) {
    const siblings = layer.filter((other) => other !== name && !(name === "cli" && other === "app"));
    if (siblings.length === 0) continue;
    rules.push({
      name: `no-sideways-from-${name}`,
      comment: `${name} and ${siblings.join(", ")} share a layer: neither imports the other`,
      severity: "error",
      from: { path: paths(name) },
      to: { path: all(siblings) },
    });
  }
  return rules;
});

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment:
        "a cycle means two modules cannot be understood (or tested) one at a time; a cycle of type imports only has no run-time effect",
      severity: "error",
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ["type-only"] } },
    },
    ...layerRules,
    {
      name: "no-cross-feature",
      comment:
        "a feature is one slice: it does not import another feature's files (what two features share lives in the layer folders)",
      severity: "error",
      from: { path: "^src/features/([^/]+)/" },
      to: { path: "^src/features/", pathNot: "^src/features/$1/" },
    },
    {
      name: "sync-is-pure",
      comment:
        "sync/ maps and plans without I/O: it imports only sync/, the provider's schemas and pure libraries",
      severity: "error",
      from: { path: "^src/sync/" },
      to: {
        pathNot: [
          "^src/sync/",
          "^src/provider/schemas\\.ts$",
          "node_modules/(zod|libphonenumber-js)/",
          "^crypto$",
        ],
      },
    },
    {
      name: "no-stand-in-in-the-product",
      comment:
        "the provider sandbox and the stand-in Shopify are development tools: the product reaches them only through loadDevTool's dynamic import",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^packages/", dependencyTypesNot: ["dynamic-import"] },
    },
    {
      name: "stand-ins-stand-alone",
      comment:
        "a stand-in reads the interface on its own: it must not import the connector's code",
      severity: "error",
      from: { path: "^packages/" },
      to: { path: ["^src/", "^test/"] },
    },
    {
      name: "no-product-import-of-tests-or-tools",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^(test|bench|scripts|workers)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    combinedDependencies: false,
    preserveSymlinks: false,
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".tsx", ".js", ".mjs", ".cjs", ".json"],
    },
  },
};
