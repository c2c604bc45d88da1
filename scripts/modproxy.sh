#!/usr/bin/env bash
# The release as a user gets it, offline: tags a clone of HEAD with the
# version the modules require of one another (the root's vX, remote/vX,
# examples/vX and cmd/acpcheck/vX), serves those modules from a module proxy made of files
# beside the third-party modules of this machine's module cache, and in a
# fresh module outside the repository runs `go get` of the root and remote
# at that version, builds an agent and a client against them (the tag's
# examples/hello and scripts/testdata/consumer) and runs them, and
# `go install`s every example binary at the tag and acpcheck at @latest,
# which then checks the installed examples/agent. Nothing goes to the
# network, and nothing outside a temporary directory is written but the
# build cache: git reads a configuration of its own (GIT_CONFIG_GLOBAL).
#
# It tests what is committed: a change still in the working tree is not in
# the clone. It fails if a go.mod has a replace directive.
#
# With -keep DIR (a directory that does not exist yet, or is empty), the
# proxy is kept once every check has passed: DIR/acprpc holds this
# repository's modules at the tag, DIR/thirdparty the other modules that
# getting, building and installing them took; the script then prints the
# GOPROXY line that lets a user try the release from them. Both are needed:
# `go get github.com/acpkit/acprpc/remote` also gets github.com/coder/websocket,
# which only the second holds.
set -euo pipefail
usage() { echo "usage: $0 [-keep DIR]" >&2; exit 2; }
keep=
case $# in
  0) ;;
  2) [ "$1" = -keep ] && [ -n "$2" ] || usage
    keep=$2 ;;
  *) usage ;;
esac
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  keep=$(cd "$keep" && pwd)
  [ -z "$(ls -A "$keep")" ] || { echo "modproxy: -keep $keep: the directory is not empty" >&2; exit 2; }
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

tmp=$(mktemp -d)
cleanup() {
  chmod -R u+w "$tmp" 2>/dev/null || true # the module caches are read-only
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() { echo "modproxy: $*" >&2; exit 1; }

# Every module the workspace's packages and tests need is in the machine's
# module cache (a network step, the only one, before everything offline).
go list -deps -test github.com/acpkit/acprpc/... >/dev/null
thirdparty=$(go env GOMODCACHE)/cache/download

git clone --quiet --no-hardlinks "$repo" "$tmp/repo"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "modproxy: the working tree has uncommitted changes; testing HEAD, $(git rev-parse --short HEAD)"
fi

echo "--- no go.mod has a replace directive (go.work holds them)"
while IFS= read -r mod; do
  if go mod edit -json "$tmp/repo/$mod" | grep -q '"Replace": \['; then
    fail "$mod has a replace directive: a user's go get or go install of it at a tag would not get what it names; put it in go.work"
  fi
done < <(git -C "$tmp/repo" ls-files '*go.mod')

# The version remote requires of the root is the release being made.
version=$(go mod edit -json "$tmp/repo/remote/go.mod" |
  sed -n '/"Path": "github.com\/acpkit\/acprpc"/{n;s/.*"Version": "\(.*\)".*/\1/p;}')
[ -n "$version" ] || fail "remote/go.mod does not require github.com/acpkit/acprpc"
examples_wants_remote=$(go mod edit -json "$tmp/repo/examples/go.mod" |
  sed -n '/"Path": "github.com\/acpkit\/acprpc\/remote"/{n;s/.*"Version": "\(.*\)".*/\1/p;}')
[ "$examples_wants_remote" = "$version" ] ||
  fail "examples/go.mod requires remote $examples_wants_remote, remote/go.mod the root $version: one release tags them together"
acpcheck_wants=$(go mod edit -json "$tmp/repo/cmd/acpcheck/go.mod" |
  sed -n '/"Path": "github.com\/acpkit\/acprpc\/remote"/{n;s/.*"Version": "\(.*\)".*/\1/p;}')
[ "$acpcheck_wants" = "$version" ] ||
  fail "cmd/acpcheck/go.mod requires remote $acpcheck_wants, remote/go.mod the root $version: one release tags them together"
echo "--- tagging $version, remote/$version, examples/$version and cmd/acpcheck/$version"
for tag in "$version" "remote/$version" "examples/$version" "cmd/acpcheck/$version"; do
  git -C "$tmp/repo" tag -f "$tag" >/dev/null
done

# Our modules' .info, .mod and .zip, made by the go command itself from the
# tagged clone: GOPROXY=direct fetches github.com/acpkit/acprpc with git,
# which the configuration below sends to the clone.
cat >"$tmp/gitconfig" <<EOF
[url "file://$tmp/repo"]
	insteadOf = https://github.com/acpkit/acprpc
[protocol "file"]
	allow = always
EOF
export GIT_CONFIG_GLOBAL=$tmp/gitconfig GIT_CONFIG_NOSYSTEM=1
export GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod GOSUMDB=off GONOSUMDB= GOPRIVATE= GONOPROXY=
mkdir -p "$tmp/empty"
(cd "$tmp/empty" && GOMODCACHE=$tmp/ours GOPROXY=direct go mod download \
  "github.com/acpkit/acprpc@$version" "github.com/acpkit/acprpc/remote@$version" \
  "github.com/acpkit/acprpc/examples@$version" "github.com/acpkit/acprpc/cmd/acpcheck@$version")
chmod -R u+w "$tmp/ours"
proxy=$tmp/ours/cache/download
rm -rf "$proxy/cache/vcs"

# From here on only files: our modules first, then the machine's cache (a
# file:// proxy answers "not found" for what it lacks, so the next is asked).
export GOPROXY="file://$proxy,file://$thirdparty" GOMODCACHE=$tmp/modcache GOBIN=$tmp/bin GOPATH=$tmp/gopath

echo "--- a fresh module: go get github.com/acpkit/acprpc@$version and remote@$version"
mkdir -p "$tmp/consumer/agent" "$tmp/consumer/client"
cd "$tmp/consumer"
go mod init example.com/consumer >/dev/null 2>&1
go get "github.com/acpkit/acprpc@$version" "github.com/acpkit/acprpc/remote@$version"
cp "$tmp/repo/examples/hello/agent/main.go" agent/
cp "$tmp/repo/examples/hello/client/main.go" client/
cp -r "$tmp/repo/scripts/testdata/consumer/wsdemo" .
go mod tidy
for m in github.com/acpkit/acprpc github.com/acpkit/acprpc/remote; do
  got=$(go list -m -f '{{.Version}} {{.Dir}}' "$m")
  case "$got" in
    "$version $tmp/modcache/"*) ;;
    *) fail "$m resolved to $got, not $version from the proxy" ;;
  esac
done
go vet ./...
go build -o "$tmp/consumer-bin/" ./...

echo "--- the fresh module's client runs its agent, over stdio and over WebSocket"
out=$("$tmp/consumer-bin/client" "$tmp/consumer-bin/agent")
[ "$out" = "You said: hello" ] || fail "the client printed \"$out\", not \"You said: hello\""
out=$("$tmp/consumer-bin/wsdemo")
[ "$out" = "You said: hello over WebSocket" ] || fail "wsdemo printed \"$out\""

echo "--- go install github.com/acpkit/acprpc/examples/...@$version, outside any module"
cd "$tmp/empty"
installed=0
while IFS= read -r pkg; do
  GOBIN=$tmp/bin/${pkg#github.com/acpkit/acprpc/examples/} go install "$pkg@$version"
  installed=$((installed + 1))
done < <(cd "$tmp/repo/examples" && go list -f '{{if eq .Name "main"}}{{.ImportPath}}{{end}}' ./...)
[ "$installed" -gt 0 ] || fail "the examples module has no commands"
out=$("$tmp/bin/hello/client/client" "$tmp/bin/hello/agent/agent")
[ "$out" = "You said: hello" ] || fail "the installed hello client printed \"$out\""
out=$("$tmp/bin/cancel/client/client" "$tmp/bin/cancel/agent/agent" | tail -n 1)
[ "$out" = "stop reason: cancelled" ] || fail "the installed cancel client ended with \"$out\""
"$tmp/bin/client/client" -agent "$tmp/bin/agent/agent"

echo "--- go install github.com/acpkit/acprpc/cmd/acpcheck@latest, outside any module, and its check of examples/agent"
GOBIN=$tmp/bin/acpcheck go install github.com/acpkit/acprpc/cmd/acpcheck@latest
got=$(go version -m "$tmp/bin/acpcheck/acpcheck" | awk '$1 == "mod" {print $3}')
[ "$got" = "$version" ] || fail "acpcheck@latest installed $got, not $version"
"$tmp/bin/acpcheck/acpcheck" run -- "$tmp/bin/agent/agent" >"$tmp/acpcheck.txt" ||
  { cat "$tmp/acpcheck.txt"; fail "the installed acpcheck found the installed examples/agent at fault"; }
tail -n 1 "$tmp/acpcheck.txt"
echo "modproxy: $installed example commands and acpcheck installed at $version, a fresh module built and ran against the proxy"

if [ -n "$keep" ]; then
  # Ours as the go command made them, and every other module the steps
  # above downloaded, in the layout a file:// proxy serves.
  cp -R "$proxy" "$keep/acprpc"
  cp -R "$GOMODCACHE/cache/download" "$keep/thirdparty"
  chmod -R u+w "$keep"
  rm -rf "$keep/thirdparty/github.com/acpkit" "$keep/thirdparty/sumdb"
  cat <<EOF
modproxy: the proxy is kept in $keep. To get the release $version from it, in a module of your own:

  export GOPROXY=file://$keep/acprpc,file://$keep/thirdparty GOSUMDB=off
  go get github.com/acpkit/acprpc@$version github.com/acpkit/acprpc/remote@$version

The first proxy serves this repository's modules, the second the third-party ones they require
(github.com/coder/websocket for remote): with the first alone, go get .../remote fails. GOSUMDB=off, since the
public checksum database does not know this build of the modules, and the third-party ones come from this
machine's module cache, which checked them when it downloaded them.
EOF
fi
