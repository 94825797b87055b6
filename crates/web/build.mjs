// Bundles each page's script (and the assets it needs) into dist/, which is committed: the
// services build it into their binaries, so they serve pages offline and without npm.
// `npm run build` after changing ts/; a test (tests/dist.rs) builds into another directory
// (`node build.mjs <dir>`) and fails while dist/ differs from it.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";

const out = process.argv[2] ?? "dist";
mkdirSync(out, { recursive: true });
await build({
  entryPoints: ["ts/approve.ts", "ts/explorer.ts", "ts/console.ts"],
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  legalComments: "eof",
  outdir: out,
  logLevel: "warning",
});
copyFileSync("node_modules/uplot/dist/uPlot.min.css", `${out}/uplot.css`);
