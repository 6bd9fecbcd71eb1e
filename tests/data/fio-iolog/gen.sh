#!/bin/sh
# Regenerates the iologs of cases.txt with the real fio (see README.md).
# Needs root for the loop device that stands for a 64 MiB block device.
# With arguments, only the cases of those names.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# FIO=/path/to/fio OUT=DIR: another fio build, iologs into DIR.
fio=${FIO:-fio}
out=${OUT:-$here}
work=$(mktemp -d)
trap 'rm -rf "$work"; [ -n "${loop:-}" ] && losetup -d "$loop"' EXIT
cd "$work"
truncate -s 64M sda
truncate -s 64M vdb.img
loop=$(losetup -f --show vdb.img)
ln -s "$loop" vdb
mkdir -p "$out"
"$fio" --version > "$out/FIO-VERSION"
grep -v '^#' "$here/cases.txt" | while IFS='|' read -r name opts; do
    name=$(echo $name)
    if [ $# -gt 0 ] && ! echo " $* " | grep -q " $name "; then continue; fi
    case "$opts" in *--ioengine=*) engine= ;; *) engine=--ioengine=null ;; esac
    opts=$(echo "$opts" | sed "s|@IOLOG@|--write_iolog=$name.iolog|")
    # shellcheck disable=SC2086
    "$fio" $engine $opts --output=/dev/null
    mv "$name.iolog" "$out/$name.iolog"
done
