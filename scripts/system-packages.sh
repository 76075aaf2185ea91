#!/usr/bin/env bash
# The Debian packages some suites use beside npm's, installed once per machine, as root:
#   bash scripts/system-packages.sh        (or sudo bash … when not root)
# - python3-prometheus-client: Prometheus' own parser, which reads the gateway's /metrics text back
#   (test/support/prometheus-text.ts);
# - chromium: the dashboard's browser suite drives Debian's Chromium, never a browser a tool downloads
#   (test/support/browser.ts);
# - openssl: the TLS front of the dashboard's examples suite (test/support/tls-front.ts);
# - postgresql and redis-server: the binaries of the servers the scale suites start of their own
#   (test/support/own-servers.ts);
# - prometheus: promtool checks and unit-tests deploy/prometheus/'s rules, and a real Prometheus scrapes a
#   test gateway (test/operator-kit/); the package's service is not started (no systemd here), the test
#   runs its own on its own port and data folder.
# `npm test` installs nothing and needs no root: without these, the suites that need them are skipped with
# their reason printed, and fail under CI (CI=true), which runs this script first (.ci/run). On a machine
# that has them all, this only asks dpkg.
set -euo pipefail
packages=(python3-prometheus-client chromium openssl postgresql redis-server prometheus)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "system-packages: missing ${missing[*]}; run it as root (sudo bash scripts/system-packages.sh)" >&2
  exit 1
fi
echo "system-packages: installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
