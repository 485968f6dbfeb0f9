# shellcheck shell=bash
# Sourced by scripts/demo and scripts/test: create .venv and keep it in step with pyproject.toml.
#
#   ensure_venv api,q2      # installs -e ".[api,q2]" when needed
#
# The stamp file .venv/.dwf-install records the hash of pyproject.toml (and of
# VENV_REQUIREMENTS) and the extras installed with it; pip runs again only when one of them
# changed or an extra is missing.
#
# Another environment: set VENV_DIR (and VENV_PYTHON, VENV_STAMP) before calling; with
# VENV_PYTHON_VERSION=3.13 it is made with that Python, and VENV_REQUIREMENTS="Django>=6.1,<6.2"
# installs those requirements beside the package.

VENV_DIR="${VENV_DIR:-.venv}"
VENV_PYTHON="$VENV_DIR/bin/python"
VENV_STAMP="$VENV_DIR/.dwf-install"
VENV_PYTHON_VERSION="${VENV_PYTHON_VERSION:-}"
VENV_REQUIREMENTS="${VENV_REQUIREMENTS:-}"

# Exit status 0 when python $1 is the wanted version: X.Y, or 3.11 or newer when none is given.
_python_fits() {
    "$1" - "${2:-}" <<'PYCODE' >/dev/null 2>&1
import sys
wanted = sys.argv[1]
if wanted:
    sys.exit(sys.version_info[:2] != tuple(int(part) for part in wanted.split(".")))
sys.exit(sys.version_info < (3, 11))
PYCODE
}

# _pick_python [X.Y]: PYTHON, then python3.11 (or pythonX.Y), then python3, then pyenv's.
_pick_python() {
    local version="${1:-}" candidate candidates=()
    if [ -n "$version" ]; then
        candidates=("python$version")
    else
        candidates=("${PYTHON:-}" python3.11 python3)
    fi
    # pyenv's shims answer only for the versions selected; its own interpreters always do.
    if command -v pyenv >/dev/null 2>&1; then
        candidates+=("$(pyenv root)"/versions/"${version:-3.11}".*/bin/"python${version:-3.11}")
    fi
    for candidate in "${candidates[@]}"; do
        [ -n "$candidate" ] || continue
        command -v "$candidate" >/dev/null 2>&1 || continue
        if _python_fits "$candidate" "$version"; then
            echo "$candidate"
            return 0
        fi
    done
    if [ -n "$version" ]; then
        echo "error: Python $version is not installed (no python$version, none under pyenv)" >&2
    else
        echo "error: Python 3.11 or newer is needed (set PYTHON=/path/to/python3.11)" >&2
    fi
    return 1
}

_pyproject_hash() {
    "$VENV_PYTHON" -c 'import hashlib, sys
print(hashlib.sha256(open(sys.argv[1], "rb").read() + sys.argv[2].encode()).hexdigest())' \
        pyproject.toml "$VENV_REQUIREMENTS"
}

ensure_venv() {
    local wanted="$1" python stamp_hash="" stamp_extras="" current_hash extras missing extra
    if ! _python_fits "$VENV_PYTHON" "$VENV_PYTHON_VERSION"; then
        python="$(_pick_python "$VENV_PYTHON_VERSION")" || return 1
        echo "==> creating $VENV_DIR with $python"
        rm -rf "$VENV_DIR"
        if ! "$python" -m venv "$VENV_DIR"; then
            echo "error: '$python -m venv' failed (on Debian: apt-get install python3-venv)" >&2
            return 1
        fi
    fi
    current_hash="$(_pyproject_hash)"
    if [ -f "$VENV_STAMP" ]; then
        read -r stamp_hash stamp_extras <"$VENV_STAMP" || true
    fi
    missing=""
    for extra in ${wanted//,/ }; do
        case ",$stamp_extras," in
            *",$extra,"*) ;;
            *) missing="$missing $extra" ;;
        esac
    done
    if [ "$stamp_hash" = "$current_hash" ] && [ -z "$missing" ]; then
        return 0
    fi
    # Keep extras installed earlier with the same pyproject.toml (the demo's and the tests').
    extras="$wanted"
    if [ "$stamp_hash" = "$current_hash" ] && [ -n "$stamp_extras" ]; then
        extras="$stamp_extras,$wanted"
    fi
    extras="$(tr ',' '\n' <<<"$extras" | sed '/^$/d' | sort -u | paste -sd, -)"
    echo "==> installing -e .[$extras] into $VENV_DIR"
    # shellcheck disable=SC2086  # VENV_REQUIREMENTS: requirements separated by spaces
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV_PYTHON" -m pip install --quiet -e ".[$extras]" \
        $VENV_REQUIREMENTS
    echo "$current_hash $extras" >"$VENV_STAMP"
}
