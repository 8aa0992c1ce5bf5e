// Fails early, with the fix, when the Node.js running npm is too old for the connector.
const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
  console.error(
    `The connector needs Node.js 22 or newer; this is ${process.version}.\n` +
      "Install a newer Node (for example `npm install --prefix ~/.node24 node@24` and put\n" +
      "~/.node24/node_modules/node/bin first on PATH), then run the command again.",
  );
  process.exit(1);
}
