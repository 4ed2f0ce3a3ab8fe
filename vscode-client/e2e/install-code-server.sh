#!/usr/bin/env bash
# Installs what the VS Code end-to-end test needs, offline from anything but the package registries:
# Debian's chromium, ripgrep and libkrb5-dev, and code-server (VS Code 1.100.3 for the browser) from npm
# into .ci/work/code-server. Idempotent: a second run with everything in place takes a second.
set -euo pipefail
cd "$(dirname "$0")/../.."

CODE_SERVER_VERSION=4.100.3   # the newest that runs on Node 20; ships VS Code 1.100.3
PREFIX=.ci/work/code-server

missing=()
for package in chromium ripgrep libkrb5-dev; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "install-code-server: apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
fi

if [[ -x $PREFIX/node_modules/.bin/code-server ]] \
   && [[ $("$PREFIX/node_modules/.bin/code-server" --version 2>/dev/null | head -1) == "$CODE_SERVER_VERSION "* ]]; then
  echo "install-code-server: code-server $CODE_SERVER_VERSION already installed"
  exit 0
fi

# @vscode/ripgrep's postinstall downloads rg from GitHub, which is not reachable here: give it Debian's rg
# in the cache it looks in first (the archive name it asks for in @vscode/ripgrep 1.15.11).
tmp=${TMPDIR:-/tmp}
cache=$tmp/vscode-ripgrep-cache-1.15.11
mkdir -p "$cache"
stage=$(mktemp -d)
cp "$(command -v rg)" "$stage/rg"
tar -czf "$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$stage" rg
rm -rf "$stage"

rm -rf "$PREFIX"
mkdir -p "$PREFIX"
echo '{"private": true}' > "$PREFIX/package.json"
echo "install-code-server: npm install code-server@$CODE_SERVER_VERSION (about 2 minutes)"
( cd "$PREFIX" && npm_config_unsafe_perm=true npm_config_yes=true \
    npm install --no-audit --no-fund --no-save --loglevel=error "code-server@$CODE_SERVER_VERSION" )
"$PREFIX/node_modules/.bin/code-server" --version | head -1
