#!/usr/bin/env node
// Runs acpcheck's prebuilt binary for this machine. npm installs the one
// package of @acpkit/acpcheck's optionalDependencies whose "os" and "cpu"
// match the machine (@acpkit/acpcheck-linux-x64, ...); this launcher finds
// it, runs it with the same arguments, standard streams and signals, and
// exits as it exits. Plain Node.js, no dependencies.
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const pkg = require("../package.json");

const goInstall = `go install github.com/acpkit/acprpc/cmd/acpcheck@v${pkg.version}`;
const target = `${process.platform}-${process.arch}`;
const platformPackage = `@acpkit/acpcheck-${target}`;
const exe = process.platform === "win32" ? "acpcheck.exe" : "acpcheck";

// cannotRun says why acpcheck cannot run here and what to do, and exits 2,
// acpcheck's own status for "could not run at all".
function cannotRun(why, remedies) {
  const lines = [`acpcheck: ${why}`, ...remedies.map((r) => `  ${r}`)];
  process.stderr.write(lines.join("\n") + "\n");
  process.exit(2);
}

// binary returns the path of the binary to run: $ACPCHECK_BINARY if set,
// else the one in this platform's package.
function binary() {
  if (process.env.ACPCHECK_BINARY) {
    return process.env.ACPCHECK_BINARY;
  }
  const shipped = Object.keys(pkg.optionalDependencies || {}).map((name) => name.replace("@acpkit/acpcheck-", ""));
  if (!shipped.includes(target)) {
    cannotRun(`no prebuilt binary for this platform: ${process.platform} on ${process.arch} (${platformPackage} does not exist; @acpkit/acpcheck ${pkg.version} ships ${shipped.join(", ")}).`, [
      `Build it with Go 1.26 or later instead: ${goInstall}`,
      "or set ACPCHECK_BINARY to the path of an acpcheck binary you built.",
    ]);
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(`${platformPackage}/package.json`));
  } catch {
    cannotRun(`${platformPackage}, the binary for ${process.platform} on ${process.arch}, is not installed.`, [
      "npm installs it as an optional dependency of @acpkit/acpcheck; it was left out (--omit=optional, --no-optional,",
      "optional=false in an .npmrc, or a lock file made on another platform). Install it again with optional dependencies:",
      `  npm install --include=optional @acpkit/acpcheck@${pkg.version}`,
      `or build acpcheck with Go 1.26 or later: ${goInstall}`,
    ]);
  }
  const file = path.join(dir, "bin", exe);
  if (!fs.existsSync(file)) {
    cannotRun(`${platformPackage} is installed in ${dir} but has no bin/${exe}: the package is damaged.`, [
      `Reinstall it: npm install --include=optional @acpkit/acpcheck@${pkg.version}`,
      `or build acpcheck with Go 1.26 or later: ${goInstall}`,
    ]);
  }
  return file;
}

function main() {
  const file = binary();
  const child = spawn(file, process.argv.slice(2), { stdio: "inherit" });
  // A signal sent to this process alone (a CI runner's timeout) reaches
  // acpcheck too, which then stops the agent it started.
  const forward = (signal) => {
    try {
      child.kill(signal);
    } catch {
      // it has exited already
    }
  };
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"];
  for (const s of signals) process.on(s, forward);
  child.on("error", (err) => {
    cannotRun(`could not start ${file}: ${err.message}`, [
      `Reinstall it: npm install --include=optional @acpkit/acpcheck@${pkg.version}`,
      `or build acpcheck with Go 1.26 or later: ${goInstall}`,
    ]);
  });
  child.on("exit", (code, signal) => {
    for (const s of signals) process.off(s, forward);
    if (signal) {
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code);
  });
}

main();
