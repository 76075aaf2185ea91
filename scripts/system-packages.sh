#!/usr/bin/env bash
# The Debian packages the tests use beside npm's: Prometheus' own Python client, whose parser reads the
# gateway's /metrics text back in test/support/prometheus-text.ts. `npm test` runs this first (pretest), so a
# fresh machine needs nothing installed by hand; on a machine that has them it only asks dpkg.
set -euo pipefail
packages=(python3-prometheus-client)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "system-packages: missing ${missing[*]}; run as root: apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "system-packages: installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
