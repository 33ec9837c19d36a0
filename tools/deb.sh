#!/bin/sh
# tools/deb.sh build | check
#
#   build  the Debian package libapache2-mod-rlaas from a copy of the tree
#          (uncommitted changes included, nothing written beside the
#          checkout), into build/deb/; lintian, where installed, must
#          report no error.
#   check  as root, the package as a user meets it: apt installs it,
#          a2enmod rlaas, apachectl -t, the system Apache serves a limit
#          (3 requests, then 429), apt purges it and nothing it installed
#          is left. Needs port 80 free (CI's fresh machine).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out="$top/build/deb"
pkg=libapache2-mod-rlaas

version() {
    sed -n 's/^#define RLAAS_VERSION "\(.*\)"$/\1/p' src/core/rlaas_version.h
}

build() {
    v=$(version)
    dv=$(dpkg-parsechangelog -S Version)
    if [ "$v" != "$dv" ]; then
        echo "debian/changelog is at $dv, src/core/rlaas_version.h at $v:" \
            "add a debian/changelog entry (dch -v $v)" >&2
        exit 1
    fi
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlaas-deb.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    mkdir "$tmp/$pkg-$v"
    tar --exclude=./.git --exclude=./build --exclude=./.libs \
        --exclude=./t/logs --exclude='./t/logs-*' -cf - . |
        (cd "$tmp/$pkg-$v" && tar -xf -)
    (cd "$tmp/$pkg-$v" && make -s clean >/dev/null 2>&1 || true)
    echo "== dpkg-buildpackage in $tmp/$pkg-$v"
    (cd "$tmp/$pkg-$v" && dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1 || {
        tail -n 80 "$tmp/build.log"
        exit 1
    }
    mkdir -p "$out"
    rm -f "$out"/*.deb
    cp "$tmp"/*.deb "$out/"
    for d in "$out"/*.deb; do
        echo "== $d"
        dpkg-deb --info "$d" | sed -n 's/^ \(Package\|Version\|Depends\):/   \1:/p'
    done
    if command -v lintian >/dev/null 2>&1; then
        echo "== lintian"
        lintian --fail-on error "$tmp"/*.changes
    else
        echo "== lintian is not installed: not run"
    fi
}

check() {
    [ "$(id -u)" = 0 ] || { echo "deb-check installs a package: run it as root" >&2; exit 1; }
    deb=$(ls "$out"/${pkg}_*.deb 2>/dev/null | head -n 1)
    [ -n "$deb" ] || { echo "no package in $out: make deb first" >&2; exit 1; }
    if perl -MIO::Socket::INET -e 'exit(IO::Socket::INET->new("127.0.0.1:80") ? 0 : 1)'; then
        echo "port 80 is in use: deb-check starts the system Apache there" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    echo "== apt-get install $deb"
    apt-get install -y -q "$deb" >/dev/null
    files=$(mktemp)
    trap 'rm -f "$files"' EXIT
    dpkg -L "$pkg" | while read -r f; do [ -f "$f" ] && echo "$f"; done >"$files"
    echo "== a2enmod rlaas"
    a2enmod rlaas
    cat >/etc/apache2/conf-available/rlaas-deb-check.conf <<'EOF'
<Location "/rlaas-deb-check">
    RLaaSLimit 3
    RLaaSWindow 1m
</Location>
EOF
    a2enconf -q rlaas-deb-check
    echo "ok" >/var/www/html/rlaas-deb-check
    echo "== apachectl -t"
    apache2ctl -t
    apache2ctl start
    i=0
    until curl -s -o /dev/null http://127.0.0.1/; do
        i=$((i + 1))
        [ $i -lt 50 ] || { tail /var/log/apache2/error.log; exit 1; }
        sleep 0.1
    done
    codes=""
    for n in 1 2 3 4; do
        codes="$codes $(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1/rlaas-deb-check)"
    done
    apache2ctl stop
    grep -q 'RLAAS0003: mod_rlaas.*local engine' /var/log/apache2/error.log ||
        { echo "no RLAAS0003 line in the error log"; exit 1; }
    echo "== served:$codes"
    [ "$codes" = " 200 200 200 429" ] || { echo "expected 200 200 200 429"; exit 1; }
    a2disconf -q rlaas-deb-check
    rm -f /etc/apache2/conf-available/rlaas-deb-check.conf /var/www/html/rlaas-deb-check
    echo "== apt-get purge $pkg"
    apt-get purge -y -q "$pkg" >/dev/null
    left=$(while read -r f; do [ -e "$f" ] && echo "$f"; done <"$files"
           ls /etc/apache2/mods-*/rlaas.* 2>/dev/null || true)
    if [ -n "$left" ]; then
        echo "left behind by the purge:"
        echo "$left"
        exit 1
    fi
    echo "== purged: nothing of the package is left"
}

case "${1:-}" in
build) build ;;
check) check ;;
*) echo "usage: $0 build|check" >&2; exit 2 ;;
esac
