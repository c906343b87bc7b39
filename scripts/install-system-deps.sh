#!/usr/bin/env bash
# Installs the Debian packages memfs needs (FUSE; the PostgreSQL server its tests start),
# once. As root it uses apt; as anyone else it names what is missing and how to install
# it, and fails.
set -euo pipefail
missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" && continue
  # A program another package provides counts: NodeSource's nodejs brings npm and
  # conflicts with Debian's npm package, which apt would then refuse to install.
  [ "$pkg" = npm ] && command -v npm >/dev/null 2>&1 && continue
  missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "memfs needs these system packages: ${missing[*]}; install them with your package manager." >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "memfs needs these system packages: ${missing[*]}" >&2
  echo "Install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "Installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# The postgresql package would start its own cluster on port 5432; the tests make their
# own throwaway ones, so keep services from starting during the install (policy-rc.d).
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
