#!/usr/bin/env bash
# acpcheck's npm packages as an agent's author gets them, offline: builds
# them (scripts/npm-package.sh) at the version of the release being made,
# twice, and checks the binaries are the same bytes; packs every package;
# installs the launcher from its tarball into a fresh project with a clean
# npm cache and no registry reachable, npm taking the platforms' packages
# from their tarballs (overrides) and installing only this machine's; then
# runs `npx acpcheck` there against an agent written on the TypeScript SDK
# (interop/npx/agent.mjs: exit 0) and the same agent made to answer a
# cancelled turn end_turn (exit 1, cancel-stop-reason failed, in -json and
# -html), and checks what the launcher says when no binary fits: none
# installed, and a platform none is built for. Needs Go, Node.js and
# scripts/node-deps.sh's packages (the agent's SDK).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "npm-test: $*" >&2; exit 1; }

# The release being made: the version the modules require of one another.
version=$(go mod edit -json cmd/acpcheck/go.mod |
  sed -n '/"Path": "github.com\/acpkit\/acprpc\/remote"/{n;s/.*"Version": "\(.*\)".*/\1/p;}')
[ -n "$version" ] || fail "cmd/acpcheck/go.mod does not require github.com/acpkit/acprpc/remote"
bash scripts/node-deps.sh
agent=$repo/interop/npx/agent.mjs

echo "--- scripts/npm-package.sh $version, twice: the same bytes"
bash scripts/npm-package.sh "$version" "$tmp/pkg"
bash scripts/npm-package.sh "$version" "$tmp/again" >/dev/null
(cd "$tmp/pkg" && find . -path '*/bin/*' -type f | sort) >"$tmp/binaries"
[ "$(wc -l <"$tmp/binaries")" -eq 7 ] || { cat "$tmp/binaries"; fail "expected the launcher and six binaries"; }
while IFS= read -r f; do
  cmp "$tmp/pkg/$f" "$tmp/again/$f" || fail "two builds of $f differ: the build is not reproducible"
done <"$tmp/binaries"

echo "--- each binary is built for its package's os and cpu, without cgo, with -trimpath"
for dir in "$tmp/pkg"/acpcheck-*/; do
  read -r os cpu < <(node -p 'const p = require(process.argv[1]); p.os[0] + " " + p.cpu[0]' "$dir/package.json")
  goos=${os/win32/windows} goarch=${cpu/x64/amd64}
  info=$(go version -m "$dir"/bin/*)
  for want in "GOOS=$goos" "GOARCH=$goarch" "CGO_ENABLED=0" "-trimpath=true"; do
    grep -q -- "$want" <<<"$info" || { echo "$info"; fail "$dir's binary was not built with $want"; }
  done
done

echo "--- npm pack, every package"
mkdir "$tmp/tarballs"
for dir in "$tmp/pkg"/*/; do
  (cd "$tmp/tarballs" && npm pack --silent "$dir" >/dev/null)
done
ls "$tmp/tarballs"
launcher=$tmp/tarballs/acpkit-acpcheck-${version#v}.tgz
[ -f "$launcher" ] || fail "no $launcher"

# npm with a clean cache, no user configuration and a registry nobody
# listens on: whatever it would fetch fails.
export npm_config_cache=$tmp/npm-cache npm_config_userconfig=$tmp/npmrc npm_config_registry=http://127.0.0.1:9/
export npm_config_offline=true npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
: >"$tmp/npmrc"
host=$(node -p 'process.platform + "-" + process.arch')

echo "--- the launcher alone (no platform's package to be had): it says what to do"
mkdir "$tmp/bare" && cd "$tmp/bare"
echo '{"name": "bare", "private": true}' >package.json
npm install "$launcher" >/dev/null
status=0
npx acpcheck -version 2>"$tmp/said" || status=$?
cat "$tmp/said"
[ "$status" -eq 2 ] || fail "the launcher without its binary exited $status, not 2"
grep -q "@acpkit/acpcheck-$host, the binary for" "$tmp/said" || fail "the launcher did not name @acpkit/acpcheck-$host"
grep -q "go install github.com/acpkit/acprpc/cmd/acpcheck@$version" "$tmp/said" || fail "the launcher gave no go install line"

echo "--- a platform none is built for: it names it"
echo 'Object.defineProperty(process, "arch", { value: "ia32" });' >"$tmp/ia32.cjs"
status=0
NODE_OPTIONS="--require $tmp/ia32.cjs" npx acpcheck -version 2>"$tmp/said" || status=$?
cat "$tmp/said"
[ "$status" -eq 2 ] || fail "the launcher on ia32 exited $status, not 2"
grep -q "no prebuilt binary for this platform: $(node -p process.platform) on ia32" "$tmp/said" || fail "the launcher did not name the platform"
grep -q "go install github.com/acpkit/acprpc/cmd/acpcheck@$version" "$tmp/said" || fail "the launcher gave no go install line"

echo "--- a fresh project: npm install the launcher, the platforms' packages from their tarballs"
mkdir "$tmp/project" && cd "$tmp/project"
node - "$tmp/tarballs" <<'JS'
const fs = require("node:fs");
const dir = process.argv[2];
const overrides = {};
for (const f of fs.readdirSync(dir)) {
  const m = f.match(/^acpkit-(acpcheck-[a-z0-9]+-[a-z0-9]+)-.*\.tgz$/);
  if (m) overrides[`@acpkit/${m[1]}`] = `file:${dir}/${f}`;
}
fs.writeFileSync("package.json", JSON.stringify({ name: "my-agent", private: true, overrides }, null, 2) + "\n");
JS
npm install --save-dev "$launcher"
installed=$(ls node_modules/@acpkit | tr '\n' ' ')
[ "$installed" = "acpcheck acpcheck-$host " ] || fail "npm installed @acpkit/{$installed}, not the launcher and acpcheck-$host alone"
got=$(npx acpcheck -version)
[ "$got" = "acpcheck $version" ] || fail "npx acpcheck -version printed \"$got\""
got=$(npx @acpkit/acpcheck -version)
[ "$got" = "acpcheck $version" ] || fail "npx @acpkit/acpcheck -version printed \"$got\""

echo "--- npx acpcheck run -- node agent.mjs: every rule passes"
npx acpcheck run -- node "$agent" || fail "acpcheck found the TypeScript SDK agent at fault (exit $?)"

echo "--- npx acpcheck run -- node agent.mjs --end-turn-on-cancel: exit 1, the finding in -json and -html"
status=0
npx acpcheck run -json -html "$tmp/report.html" -- node "$agent" --end-turn-on-cancel >"$tmp/report.json" || status=$?
[ "$status" -eq 1 ] || { cat "$tmp/report.json"; fail "acpcheck exited $status against the faulty agent, not 1"; }
node - "$tmp/report.json" <<'JS'
const rep = JSON.parse(require("node:fs").readFileSync(process.argv[2], "utf8"));
const failed = rep.results.filter((r) => r.status === "fail").map((r) => r.id);
console.log(`failed: ${failed.join(", ")}`);
if (!failed.includes("cancel-stop-reason")) {
  console.error("npm-test: cancel-stop-reason did not fail");
  process.exit(1);
}
JS
grep -q "cancel-stop-reason" "$tmp/report.html" || fail "the -html page does not name cancel-stop-reason"
echo "npm-test: @acpkit/acpcheck ${version#v} packed, installed offline and run on $host"
