# shellcheck shell=bash
# Sourced by scripts/demo and scripts/test: create .venv and keep it in step with pyproject.toml.
#
#   ensure_venv api,q2      # installs -e ".[api,q2]" when needed
#
# The stamp file .venv/.dwf-install records the hash of pyproject.toml and the extras
# installed with it; pip runs again only when pyproject.toml changed or an extra is missing.

VENV_DIR="${VENV_DIR:-.venv}"
VENV_PYTHON="$VENV_DIR/bin/python"
VENV_STAMP="$VENV_DIR/.dwf-install"

_pick_python() {
    local candidate
    for candidate in "${PYTHON:-}" python3.11 python3; do
        [ -n "$candidate" ] || continue
        command -v "$candidate" >/dev/null 2>&1 || continue
        if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    echo "error: Python 3.11 or newer is needed (set PYTHON=/path/to/python3.11)" >&2
    return 1
}

_pyproject_hash() {
    "$VENV_PYTHON" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' pyproject.toml
}

ensure_venv() {
    local wanted="$1" python stamp_hash="" stamp_extras="" current_hash extras missing extra
    if ! "$VENV_PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; then
        python="$(_pick_python)" || return 1
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
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV_PYTHON" -m pip install --quiet -e ".[$extras]"
    echo "$current_hash $extras" >"$VENV_STAMP"
}
