#!/usr/bin/env bash
# Builds acpcheck's npm packages for a release: @acpkit/acpcheck, whose
# launcher runs the binary for the machine, and one package per platform
# holding that binary (@acpkit/acpcheck-linux-x64, ...), the platforms being
# the launcher's optionalDependencies (npm/acpcheck/package.json). Every
# package's version is the release's tag without its "v".
#
#   scripts/npm-package.sh v0.2.0 [OUTDIR]     (OUTDIR: dist/npm)
#
# or cmd/acpcheck/v0.2.0. Each binary is cross-compiled by go build without
# cgo, with -trimpath and -buildvcs=false, the version stamped in for
# `acpcheck -version`: two builds of one commit with one Go give the same
# bytes. When the tag exists it must be the checkout's HEAD (check the tag
# out first); without it (a test, before tagging) HEAD is built as that
# version. The packages are left as directories: `npm pack` or
# `npm publish` each (the launcher's last, once the platforms' are up).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

fail() { echo "npm-package: $*" >&2; exit 1; }

[ $# -ge 1 ] && [ $# -le 2 ] || fail "usage: scripts/npm-package.sh vX.Y.Z [OUTDIR]"
tag=$1
version=${tag#cmd/acpcheck/}
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
  fail "\"$tag\" is not a release tag: give vX.Y.Z or cmd/acpcheck/vX.Y.Z"
out=${2:-dist/npm}
case $out in /*) ;; *) out=$repo/$out ;; esac

for t in "cmd/acpcheck/$version" "$version"; do
  if commit=$(git rev-parse -q --verify "refs/tags/$t^{commit}"); then
    [ "$commit" = "$(git rev-parse HEAD)" ] ||
      fail "the tag $t is $commit, not HEAD: git checkout $t first, so that the binaries are the tag's"
  fi
done
if [ -n "$(git status --porcelain --untracked-files=no -- . ':!dist')" ]; then
  echo "npm-package: the working tree has uncommitted changes; they are built in" >&2
fi

rm -rf "$out"
mkdir -p "$out"
launcher=$out/acpcheck
cp -r npm/acpcheck "$launcher"

# The launcher's package.json at this version, its optionalDependencies
# too; the platforms' names, one a line.
platforms=$(node - "$launcher/package.json" "${version#v}" <<'JS'
const fs = require("node:fs");
const [file, version] = process.argv.slice(2);
const pkg = JSON.parse(fs.readFileSync(file, "utf8"));
pkg.version = version;
for (const name of Object.keys(pkg.optionalDependencies)) pkg.optionalDependencies[name] = version;
fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n");
for (const name of Object.keys(pkg.optionalDependencies)) console.log(name.replace("@acpkit/acpcheck-", ""));
JS
)

for platform in $platforms; do
  os=${platform%-*} cpu=${platform#*-}
  case $os in linux | darwin) goos=$os exe=acpcheck ;; win32) goos=windows exe=acpcheck.exe ;; *) fail "no GOOS for $platform" ;; esac
  case $cpu in x64) goarch=amd64 ;; arm64) goarch=arm64 ;; *) fail "no GOARCH for $platform" ;; esac
  dir=$out/acpcheck-$platform
  mkdir -p "$dir/bin"
  (cd cmd/acpcheck && CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch GOFLAGS= \
    go build -trimpath -buildvcs=false -ldflags "-s -w -X main.stampedVersion=$version" -o "$dir/bin/$exe" .)
  LAUNCHER_PACKAGE=$launcher/package.json node - "$dir/package.json" "@acpkit/acpcheck-$platform" "${version#v}" "$os" "$cpu" "$exe" <<'JS'
const fs = require("node:fs");
const [file, name, version, os, cpu, exe] = process.argv.slice(2);
const launcher = require(process.env.LAUNCHER_PACKAGE);
const pkg = {
  name,
  version,
  description: `acpcheck's binary for ${os} on ${cpu}: install @acpkit/acpcheck, which runs it`,
  license: launcher.license,
  repository: launcher.repository,
  os: [os],
  cpu: [cpu],
  files: [`bin/${exe}`],
  preferUnplugged: true,
};
fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n");
JS
  echo "npm-package: @acpkit/acpcheck-$platform $version ($goos/$goarch)"
done
echo "npm-package: @acpkit/acpcheck ${version#v} and its platforms in $out"
