// Builds dist/ (tsc) whenever npm prepares this package: on `npm ci` here, and when a user
// installs it from its folder (`npm install /path/to/bursar/sdk/typescript`), where npm runs
// `prepare` in the folder before its own dependencies are there — so they are installed first
// (from the lockfile, scripts off: no second `prepare`).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL("..", import.meta.url));
const run = (command, args) => execFileSync(command, args, { cwd: here, stdio: "inherit" });
if (!existsSync(`${here}/node_modules/typescript`)) {
  run("npm", ["ci", "--ignore-scripts", "--no-audit", "--no-fund"]);
}
run(process.execPath, [`${here}/node_modules/typescript/bin/tsc`, "-p", "tsconfig.json"]);
