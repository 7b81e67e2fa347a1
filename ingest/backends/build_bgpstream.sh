#!/usr/bin/env bash
# Build CAIDA's libbgpstream (and wandio, which it needs) from the unmodified sources in
# VENDOR into the private prefix PREFIX, for the pybgpstream backend. Never system-wide.
# Cached: a second run with the same archives does nothing (PREFIX/.built holds their
# sha256s). Offline: --without-broker (its configure fetches the broker's URL).
#   usage: build_bgpstream.sh VENDOR PREFIX
set -euo pipefail
vendor=$(cd "$1" && pwd)
prefix=$(mkdir -p "$2" && cd "$2" && pwd)
stamp="$prefix/.built"
if [ ! -f "$vendor/SHA256SUMS" ]; then
  echo "error: $vendor/SHA256SUMS not found (the vendor sources: ../shared/vendor)" >&2; exit 1
fi
(cd "$vendor" && sha256sum --quiet -c SHA256SUMS) || {
  echo "error: $vendor: an archive does not match SHA256SUMS; not building it" >&2; exit 1; }
want=$(cat "$vendor/SHA256SUMS")
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$prefix/lib/libbgpstream.so" ]; then
  exit 0  # built from these very archives already
fi
missing=""
for tool in autoreconf libtoolize make cc; do command -v "$tool" >/dev/null || missing="$missing $tool"; done
for hdr in curl/curl.h zlib.h bzlib.h lzma.h zstd.h lz4.h; do
  printf '#include <%s>\n' "$hdr" | cc -E -x c - >/dev/null 2>&1 || missing="$missing $hdr"
done
if [ -n "$missing" ]; then
  echo "error: building libbgpstream needs:$missing (Debian: apt-get install autoconf automake libtool libcurl4-openssl-dev zlib1g-dev libbz2-dev liblzma-dev libzstd-dev liblz4-dev)" >&2
  exit 1
fi
src="$prefix/src"
rm -rf "$src" && mkdir -p "$src"
start=$(date +%s)
tar -xzf "$vendor/wandio-4.2.6.tar.gz" -C "$src"
tar -xzf "$vendor/libbgpstream-2.3.0.tar.gz" -C "$src"
log="$prefix/build.log"
: > "$log"
run() { "$@" >>"$log" 2>&1 || { echo "error: building libbgpstream failed at: $* (see $log)" >&2; exit 1; }; }
cd "$src"/wandio-*/
run ./bootstrap.sh
run ./configure --prefix="$prefix"
run make -j"$(nproc)"
run make install
cd "$src"/libbgpstream-*/
run ./autogen.sh
run ./configure --prefix="$prefix" CPPFLAGS="-I$prefix/include" LDFLAGS="-L$prefix/lib -Wl,-rpath,$prefix/lib" \
  --without-kafka --without-broker
run make -j"$(nproc)"
run make install
echo "$want" > "$stamp"
echo "libbgpstream and wandio built into $prefix in $(( $(date +%s) - start )) s"
