#!/bin/sh
# The machine prerequisites of `make install`, `make services`, `make test` and `make demo`, checked before anything
# else runs, so that a fresh machine never fails halfway through with a tool's raw error.
#
#   sh tools/prereq.sh [ENV_FILE]
#
# For each tool it prints one line: the version and path found, "installed", or MISSING with what is wrong. Where
# one is missing it installs it when it can: Debian packages with one quiet, non-interactive `apt-get update` and
# one `apt-get install` when running as root; Go >= 1.24 as Go's own toolchain module from the Go module proxy into
# the cache (no root needed; tools/go_toolchain.py). Otherwise it stops with exit 1 and the exact command to run.
# On success it writes ENV_FILE (if given): shell `export` lines for the paths it found, which the Makefile sources
# before each command (JAVA_HOME and PATH, STREAMPROC_GO, STREAMPROC_PG_BINDIR, STREAMPROC_CHROMIUM).
#
# It runs before the project's venv exists: POSIX sh, sed and coreutils only; well under a second when everything
# is present. Settings (environment):
#   PYTHON                      the interpreter to check (default python3.11; the Makefile passes its own)
#   STREAMPROC_CACHE            the cache (default ~/.cache/streamproc): the Go toolchain and the apt-get log go here
#   STREAMPROC_PREREQ_INSTALL   auto (default: install what it can) or never (only check and print the commands)
#   STREAMPROC_GO, STREAMPROC_PG_BINDIR, STREAMPROC_CHROMIUM, JAVA_HOME   tried first when set
#   STREAMPROC_PREREQ_SYSROOT   prefix for the fixed places searched (/usr/lib/jvm, /usr/lib/postgresql); for tests
#   STREAMPROC_PREREQ_DOCKER    the compose deployment test's tools: a Docker engine (dockerd, Debian's docker.io)
#                               and debootstrap (its stand-in base image). auto (default): installed with apt-get
#                               like the rest when missing and root; not root, a missing one is one line (the test
#                               is then skipped with its reason, streamproc_dev/deploy_test.py), not a stop.
#                               yes (`make deploy-test`): required, a stop when missing. no: neither checked nor
#                               installed (`make test` then skips the deployment test, saying so).
# shellcheck disable=SC2329 # the check_<tool> functions are called by name, "check_$tool"
set -u

PYTHON=${PYTHON:-python3.11}
CACHE=${STREAMPROC_CACHE:-$HOME/.cache/streamproc}
INSTALL=${STREAMPROC_PREREQ_INSTALL:-auto}
SYSROOT=${STREAMPROC_PREREQ_SYSROOT:-}
ENV_FILE=${1:-}
case $0 in */*) HERE=${0%/*} ;; *) HERE=. ;; esac

JAVA_MIN=17
MAVEN_MIN=3.6.3
GO_MIN=1.24
PG_MIN=13
# The Go toolchain installed when no Go >= GO_MIN is found. The SHA-256 is that of the module zip whose h1: hash
# (h1:5sgfUhn9QCgVl4UYj32GrIYFHI3bi2UX55tNfupXwxc=) Go's checksum database lists for
# golang.org/toolchain v0.0.1-go1.24.13.linux-amd64. Other platforms: install Go by hand (the line says how).
GO_TOOLCHAIN=1.24.13
# shellcheck disable=SC2034 # read as GO_TOOLCHAIN_SHA256_<platform> below
GO_TOOLCHAIN_SHA256_linux_amd64=d2b048367a3d1a748b87f756fa06df12ce3b419e1d5f2a3612acb8950d615f9f

TOOLS="python java mvn go cc postgresql chromium"

# ---- small helpers ---------------------------------------------------------------------------------------------

# version_ge A B: true when dotted number A >= B ("17.0.15" >= "17"; a missing part counts as 0).
version_ge() {
	_a=$1. _b=$2.
	while [ -n "$_a" ] || [ -n "$_b" ]; do
		_x=${_a%%.*} _y=${_b%%.*}
		_a=${_a#*.} _b=${_b#*.}
		case ${_x:-0}${_y:-0} in *[!0-9]*) return 1 ;; esac
		[ "${_x:-0}" -gt "${_y:-0}" ] && return 0
		[ "${_x:-0}" -lt "${_y:-0}" ] && return 1
	done
	return 0
}

# java_major VERSION: "17.0.15" -> 17, "1.8.0_292" -> 8, "21-ea" -> 21.
java_major() {
	case $1 in
	1.*) _m=${1#1.} ;;
	*) _m=$1 ;;
	esac
	_m=${_m%%[!0-9]*}
	printf '%s\n' "${_m:-0}"
}

# Result of one tool: r_<tool> = ok|bad, d_<tool> = the rest of its line, plus what the env file needs.
ok() { eval "r_$1=ok; d_$1=\$2"; }
bad() { eval "r_$1=bad; d_$1=\$2"; }
result() { eval "printf '%s\n' \"\$r_$1\""; }

# Single-quote a value for the env file.
quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# ---- one check per tool ------------------------------------------------------------------------------------------

PY_HEADERS=no
check_python() {
	_py=$(command -v "$PYTHON" 2>/dev/null) || {
		bad python "$PYTHON not found"
		return
	}
	_out=$("$_py" -c 'import os, sys, sysconfig
print("%d.%d.%d" % sys.version_info[:3])
print("yes" if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else "no")
import ensurepip, venv' 2>/dev/null)
	_rc=$?
	_v=$(printf '%s\n' "$_out" | sed -n 1p)
	PY_HEADERS=$(printf '%s\n' "$_out" | sed -n 2p)
	case $_v in
	3.11.*) ;;
	'') bad python "$_py does not run" && return ;;
	*) bad python "$_py is Python $_v; streamproc needs 3.11 (set PYTHON=/path/to/python3.11)" && return ;;
	esac
	if [ "$_rc" -ne 0 ]; then
		bad python "$_v $_py lacks the venv/ensurepip modules"
		return
	fi
	ok python "$_v $_py"
}

JAVA_HOME_FOUND=
check_java() {
	_cands=
	[ -n "${JAVA_HOME:-}" ] && _cands="$JAVA_HOME/bin/java"
	_j=$(command -v java 2>/dev/null) && _cands="$_cands $_j"
	for _j in "$SYSROOT"/usr/lib/jvm/*/bin/java; do
		[ -x "$_j" ] && _cands="$_cands $_j"
	done
	_seen=
	for _j in $_cands; do
		[ -x "$_j" ] || continue
		_v=$("$_j" -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -n 1)
		[ -n "$_seen" ] || _seen="$_j is ${_v:-of an unknown version}"
		[ -n "$_v" ] && [ "$(java_major "$_v")" -ge "$JAVA_MIN" ] || continue
		_real=$(readlink -f "$_j")
		if [ ! -x "${_real%/java}/javac" ]; then
			_seen="$_j ($_v) is a JRE without javac; Maven needs a JDK"
			continue
		fi
		JAVA_HOME_FOUND=${_real%/bin/java}
		export JAVA_HOME="$JAVA_HOME_FOUND" # for `mvn -v` below
		ok java "$_v $_j"
		return
	done
	if [ -n "$_seen" ]; then
		bad java "need a JDK >= $JAVA_MIN; $_seen"
	else
		bad java "need a JDK >= $JAVA_MIN; no java on PATH, in JAVA_HOME or in /usr/lib/jvm"
	fi
}

check_mvn() {
	_m=$(command -v mvn 2>/dev/null) || {
		bad mvn "mvn not on PATH"
		return
	}
	_v=$("$_m" -B -v 2>&1 | sed -n 's/.*Apache Maven \([0-9][0-9.]*\).*/\1/p' | head -n 1)
	if [ -z "$_v" ]; then
		bad mvn "$_m does not run ('$_m -v' printed no version; it needs a working java)"
	elif version_ge "$_v" "$MAVEN_MIN"; then
		ok mvn "$_v $_m"
	else
		bad mvn "$_m is Maven $_v; need >= $MAVEN_MIN"
	fi
}

PLATFORM=
case $(uname -s)/$(uname -m) in
Linux/x86_64 | Linux/amd64) PLATFORM=linux-amd64 ;;
Linux/aarch64 | Linux/arm64) PLATFORM=linux-arm64 ;;
esac
GO_CACHED="$CACHE/go$GO_TOOLCHAIN.$PLATFORM/bin/go"
eval "GO_SHA256=\${GO_TOOLCHAIN_SHA256_$(printf '%s' "$PLATFORM" | sed 's/-/_/g'):-}"
GO_FOUND=
check_go() {
	_cands=
	[ -n "${STREAMPROC_GO:-}" ] && _cands=$STREAMPROC_GO
	_g=$(command -v go 2>/dev/null) && _cands="$_cands $_g"
	_cands="$_cands $GO_CACHED"
	_seen=
	for _g in $_cands; do
		[ -x "$_g" ] || continue
		_v=$("$_g" version 2>/dev/null | sed -n 's/^go version go\([0-9][0-9.]*\).*/\1/p')
		[ -n "$_seen" ] || _seen="; $_g is ${_v:+go}${_v:-of an unknown version}"
		if [ -n "$_v" ] && version_ge "$_v" "$GO_MIN"; then
			GO_FOUND=$_g
			ok go "$_v $_g"
			return
		fi
	done
	bad go "need Go >= $GO_MIN (builds MinIO, the S3 test server)${_seen:-; no go on PATH}"
}

check_cc() {
	_c=$(command -v cc 2>/dev/null) || _c=$(command -v gcc 2>/dev/null) || {
		bad cc "no C compiler (cc) on PATH; make install compiles streamproc/engine/_bulk_kernel.c"
		return
	}
	_v=$("$_c" --version 2>/dev/null | sed -n '1s/.* \([0-9][0-9.]*\).*/\1/p')
	if [ "$PY_HEADERS" != yes ]; then
		bad cc "${_v:-?} $_c, but $PYTHON has no Python.h to compile the engine's kernel against"
		return
	fi
	ok cc "${_v:-?} $_c"
}

PG_BINDIR_FOUND=
check_postgresql() {
	if [ -n "${STREAMPROC_PG_BINDIR:-}" ]; then
		_cands=$STREAMPROC_PG_BINDIR
	else
		_cands=$(pg_config --bindir 2>/dev/null)
		for _d in "$SYSROOT"/usr/lib/postgresql/*/bin; do _cands="$_cands $_d"; done
		_i=$(command -v initdb 2>/dev/null) && _cands="$_cands ${_i%/initdb}"
	fi
	_best='' _bestv=''
	for _d in $_cands; do
		[ -x "$_d/initdb" ] && [ -x "$_d/pg_ctl" ] && [ -x "$_d/postgres" ] || continue
		_v=$("$_d/initdb" --version 2>/dev/null | sed -n 's/.*(PostgreSQL) \([0-9][0-9.]*\).*/\1/p')
		[ -n "$_v" ] || continue
		if [ -z "$_best" ] || ! version_ge "$_bestv" "$_v"; then _best=$_d _bestv=$_v; fi
	done
	if [ -z "$_best" ]; then
		bad postgresql "no PostgreSQL server binaries (initdb, pg_ctl, postgres)${STREAMPROC_PG_BINDIR:+ in STREAMPROC_PG_BINDIR=$STREAMPROC_PG_BINDIR}"
	elif version_ge "$_bestv" "$PG_MIN"; then
		PG_BINDIR_FOUND=$_best
		ok postgresql "$_bestv $_best"
	else
		bad postgresql "$_best is PostgreSQL $_bestv; need >= $PG_MIN"
	fi
}

CHROMIUM_FOUND=
check_chromium() {
	if [ -n "${STREAMPROC_CHROMIUM:-}" ]; then
		_cands=$STREAMPROC_CHROMIUM
	else
		_cands=
		for _n in chromium chromium-browser; do
			_c=$(command -v "$_n" 2>/dev/null) && _cands="$_cands $_c"
		done
	fi
	for _c in $_cands; do
		[ -x "$_c" ] || continue
		_v=$("$_c" --version 2>/dev/null | sed -n 's/^[^0-9]* \([0-9][0-9.]*\).*/\1/p' | head -n 1)
		[ -n "$_v" ] || continue
		CHROMIUM_FOUND=$_c
		ok chromium "$_v $_c"
		return
	done
	bad chromium "no Chromium${STREAMPROC_CHROMIUM:+ at STREAMPROC_CHROMIUM=$STREAMPROC_CHROMIUM} (the browser tests drive it)"
}

# Debian packages that provide each tool (go: none, Debian's is too old; it comes from the module proxy).
debian_packages() {
	case $1 in
	python) echo "python3.11 python3.11-venv python3.11-dev" ;;
	java) echo "openjdk-17-jdk-headless" ;;
	mvn) echo "maven" ;;
	cc) echo "gcc python3.11-dev" ;;
	postgresql) echo "postgresql" ;;
	chromium) echo "chromium chromium-driver" ;;
	esac
}

check_all() {
	for _t in ${1:-$TOOLS}; do "check_$_t"; done
}

# ---- check, install what can be installed, check again -----------------------------------------------------------

check_all

missing=
for t in $TOOLS; do [ "$(result "$t")" = bad ] && missing="$missing $t"; done

IS_ROOT=no
[ "$(id -u)" = 0 ] && IS_ROOT=yes
HAVE_APT=no
command -v apt-get >/dev/null 2>&1 && HAVE_APT=yes

apt_pkgs=
for t in $missing; do
	for p in $(debian_packages "$t"); do
		case " $apt_pkgs " in *" $p "*) ;; *) apt_pkgs="${apt_pkgs:+$apt_pkgs }$p" ;; esac
	done
done

installed=
if [ -n "$apt_pkgs" ] && [ "$INSTALL" = auto ] && [ "$IS_ROOT" = yes ] && [ "$HAVE_APT" = yes ]; then
	mkdir -p "$CACHE"
	log="$CACHE/prereq-apt.log"
	echo "prereq: installing $apt_pkgs with apt-get (log: $log)"
	# shellcheck disable=SC2086 # $apt_pkgs is a list of package names
	if DEBIAN_FRONTEND=noninteractive apt-get -qq -o DPkg::Lock::Timeout=600 update >"$log" 2>&1 &&
		DEBIAN_FRONTEND=noninteractive apt-get -qq -y -o DPkg::Lock::Timeout=600 install $apt_pkgs >>"$log" 2>&1; then
		installed=$missing
	else
		echo "prereq: apt-get failed; the end of $log:"
		tail -n 5 "$log" | sed 's/^/prereq:   /'
	fi
	check_all "$missing"
fi

GO_TRIED=no
if [ "$(result go)" = bad ] && [ "$INSTALL" = auto ] && [ -n "$GO_SHA256" ] && [ "$(result python)" = ok ]; then
	echo "prereq: downloading Go $GO_TOOLCHAIN from the Go module proxy into ${GO_CACHED%/bin/go}"
	GO_TRIED=yes
	if "$PYTHON" "$HERE/go_toolchain.py" "$GO_TOOLCHAIN" "$PLATFORM" "$GO_SHA256" "${GO_CACHED%/bin/go}" >/dev/null; then
		installed="$installed go"
	fi
	check_go
fi

failed=
for t in $TOOLS; do
	eval "_d=\$d_$t"
	if [ "$(result "$t")" = ok ]; then
		case " $installed " in *" $t "*) _d="$_d (installed)" ;; esac
		printf 'prereq: %-10s %s\n' "$t" "$_d"
	else
		printf 'prereq: %-10s MISSING: %s\n' "$t" "$_d"
		failed="$failed $t"
	fi
done

if [ -n "$failed" ]; then
	echo "prereq: stopped before anything else ran; install what is missing and run make again:"
	apt_pkgs=
	for t in $failed; do
		for p in $(debian_packages "$t"); do
			case " $apt_pkgs " in *" $p "*) ;; *) apt_pkgs="${apt_pkgs:+$apt_pkgs }$p" ;; esac
		done
	done
	if [ -n "$apt_pkgs" ]; then
		sudo=
		[ "$IS_ROOT" = yes ] || sudo="sudo "
		if [ "$HAVE_APT" = yes ]; then
			echo "  ${sudo}apt-get update && ${sudo}apt-get install -y $apt_pkgs"
		else
			echo "  install with your system's package manager what provides:$failed (Debian names: $apt_pkgs)"
		fi
	fi
	case " $failed " in *" go "*)
		if [ -z "$GO_SHA256" ]; then
			echo "  install Go >= $GO_MIN from https://go.dev/dl/ and put it on PATH (or set STREAMPROC_GO=/path/to/go)"
		elif [ "$GO_TRIED" = yes ]; then
			echo "  the Go download failed (above): make ${GOPROXY:-https://proxy.golang.org} reachable and run make again, or install Go >= $GO_MIN from https://go.dev/dl/ (or set STREAMPROC_GO=/path/to/go)"
		elif [ "$INSTALL" = auto ]; then
			echo "  then run make again: it downloads Go $GO_TOOLCHAIN into $CACHE with $PYTHON (no root needed)"
		else
			echo "  unset STREAMPROC_PREREQ_INSTALL and run make again: it downloads Go $GO_TOOLCHAIN into $CACHE (no root needed)"
		fi
		;;
	esac
	exit 1
fi

# The deployment test's engine and image tools (STREAMPROC_PREREQ_DOCKER: auto by default, yes, no).
DOCKER_MODE=${STREAMPROC_PREREQ_DOCKER:-auto}
if [ "$DOCKER_MODE" != no ]; then
	docker_missing() {
		! { command -v dockerd || [ -x /usr/sbin/dockerd ]; } >/dev/null 2>&1 ||
			! { command -v debootstrap || [ -x /usr/sbin/debootstrap ]; } >/dev/null 2>&1
	}
	_docker_note=
	if docker_missing && [ "$INSTALL" = auto ] && [ "$IS_ROOT" = yes ] && [ "$HAVE_APT" = yes ]; then
		mkdir -p "$CACHE"
		log="$CACHE/prereq-apt.log"
		echo "prereq: installing docker.io debootstrap with apt-get (log: $log)"
		DEBIAN_FRONTEND=noninteractive apt-get -qq -o DPkg::Lock::Timeout=600 update >"$log" 2>&1 &&
			DEBIAN_FRONTEND=noninteractive apt-get -qq -y -o DPkg::Lock::Timeout=600 install docker.io debootstrap >>"$log" 2>&1 &&
			_docker_note=" (installed)"
	fi
	sudo=
	[ "$IS_ROOT" = yes ] || sudo="sudo "
	if ! docker_missing; then
		_dockerd=$(command -v dockerd 2>/dev/null || echo /usr/sbin/dockerd)
		_dv=$("$_dockerd" --version 2>/dev/null | sed -n 's/^Docker version \([^,]*\),.*/\1/p')
		printf 'prereq: %-10s %s %s%s\n' docker "${_dv:-?}" "$_dockerd" "$_docker_note"
	elif [ "$DOCKER_MODE" = yes ] || [ "$IS_ROOT" = yes ]; then
		# root (CI) must run the deployment test: a failed install is a stop, as for every other tool
		printf 'prereq: %-10s MISSING: dockerd or debootstrap (the deployment test builds images and runs them)\n' docker
		echo "  ${sudo}apt-get update && ${sudo}apt-get install -y docker.io debootstrap"
		exit 1
	else
		printf 'prereq: %-10s not installed: the deployment test needs it and root (%sapt-get install -y docker.io debootstrap)\n' docker "$sudo"
	fi
fi

if [ -n "$ENV_FILE" ]; then
	_tmp="$ENV_FILE.tmp.$$"
	{
		echo "# Written by tools/prereq.sh: the tools it found on this machine. The Makefile sources it before each command."
		echo "export JAVA_HOME=$(quote "$JAVA_HOME_FOUND")"
		echo "export PATH=$(quote "$JAVA_HOME_FOUND/bin"):\"\$PATH\""
		echo "export STREAMPROC_GO=$(quote "$GO_FOUND")"
		echo "export STREAMPROC_PG_BINDIR=$(quote "$PG_BINDIR_FOUND")"
		echo "export STREAMPROC_CHROMIUM=$(quote "$CHROMIUM_FOUND")"
	} >"$_tmp" && mv -f "$_tmp" "$ENV_FILE"
fi
exit 0
