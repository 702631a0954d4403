#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every MESSAGE_ID the daemon writes has an entry in the catalog, and journalctl can compile it.
set -u
src=$1
n=0
fail=0
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

mkdir -p "$root/usr/lib/systemd/catalog" "$root/var/lib/systemd/catalog"
cp "$src/catalog/modgate.catalog" "$root/usr/lib/systemd/catalog/"
n=$((n + 1))
if out=$(journalctl --root="$root" --update-catalog 2>&1) && listed=$(journalctl --root="$root" --list-catalog 2>&1); then
        echo "ok $n - journalctl compiles the catalog"
else
        echo "not ok $n - journalctl compiles the catalog"
        printf '# %s\n' "$out"
        fail=1
fi

ids=$(sed -n 's/^#define MODGATE_MESSAGE_[A-Z_]* "\([0-9a-f]\{32\}\)"$/\1/p' "$src/src/daemon/record-journal.h")
defined=$(grep -c '^#define MODGATE_MESSAGE_' "$src/src/daemon/record-journal.h")
n=$((n + 1))
# Every MODGATE_MESSAGE_ define is a 32-digit id that the pattern above read: none slipped past it.
if [ -n "$ids" ] && [ "$(wc -w <<<"$ids")" -eq "$defined" ]; then
        echo "ok $n - record-journal.h defines $defined message ids, each read here"
else
        echo "not ok $n - record-journal.h defines $defined message ids, read $(wc -w <<<"$ids")"
        fail=1
fi

for id in $ids; do
        n=$((n + 1))
        if grep -q "^$id " <<<"${listed:-}"; then
                echo "ok $n - catalog explains $id"
        else
                echo "not ok $n - catalog explains $id"
                fail=1
        fi
done

# And the other way round: the catalog explains no id that the daemon does not write.
for id in $(sed -n 's/^-- \([0-9a-f]\{32\}\)$/\1/p' "$src/catalog/modgate.catalog"); do
        n=$((n + 1))
        if grep -qw "$id" <<<"$ids"; then
                echo "ok $n - $id in the catalog is a message id of the daemon"
        else
                echo "not ok $n - $id in the catalog is a message id of the daemon"
                fail=1
        fi
done
echo "1..$n"
exit $fail
