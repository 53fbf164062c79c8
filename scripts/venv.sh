# Sourced by the scripts that run Python tools (crosscheck.sh, docs.sh): cached_venv NAME PIP_FLAGS PIN... prints
# the path of a venv in the dependency cache holding the pinned packages, installing them on first use (a venv per
# set of pins: a changed pin makes a new one; an install cut short is redone, .complete marks a finished one).
cached_venv() {
  local name=$1 flags=$2
  shift 2
  local cache=${KTR_DEPS_CACHE:-$HOME/.cache/ktr}
  local venv
  venv=$cache/venv-$name-$(echo "$*" | sha1sum | cut -c1-10)
  if [[ ! -f $venv/.complete ]]; then
    echo "[$name] installing $* into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    # shellcheck disable=SC2086 # flags are words
    "$venv/bin/pip" install -q --disable-pip-version-check $flags "$@" >&2
    touch "$venv/.complete"
  fi
  echo "$venv"
}
