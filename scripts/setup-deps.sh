#!/usr/bin/env bash
# Installs the Debian packages arlsim builds with, only when one of them is missing; with --test,
# also those its tests use.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache pkg-config make
  libboost-graph-dev libboost-program-options-dev libeigen3-dev
  nlohmann-json3-dev doctest-dev libbenchmark-dev libyaml-cpp-dev zlib1g-dev
  qt6-base-dev libgl-dev xvfb xauth fonts-dejavu-core
  libopenmpi-dev openmpi-bin python3
)

# The tests also render the HTML reports in a headless browser.
[ "${1:-}" = "--test" ] && packages+=(chromium)

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "arlsim: installing missing packages: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
