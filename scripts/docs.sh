#!/usr/bin/env bash
# The documentation site: builds docs/ with MkDocs --strict (a broken link, a missing page or an anchor that does
# not exist is an error), pinned with its dependencies in a venv kept in the dependency cache, into a temporary
# folder (the site is not kept: the pages read on the forge as they are). The links and the pages' reachability
# from the README are checked by the test Docs.EveryPageIsLinkedAndEveryLinkResolves (cmake/ktrCheckDocs.cmake).
#   scripts/docs.sh [SITE_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pins=(mkdocs==1.6.1 Markdown==3.11.3 Jinja2==3.1.6 MarkupSafe==3.0.4 PyYAML==6.0.4 click==8.5.1 mergedeep==1.3.4
  mkdocs-get-deps==0.2.2 packaging==26.4 pathspec==1.1.1 platformdirs==4.14.9 pyyaml_env_tag==1.1 ghp-import==2.1.0
  python-dateutil==4.0.0 watchdog==7.1.1)
source scripts/venv.sh
venv=$(cached_venv docs --no-deps "${pins[@]}")
site=${1:-}
if [[ -z $site ]]; then
  site=$(mktemp -d)
  trap 'rm -rf "$site"' EXIT
fi
"$venv/bin/mkdocs" build --strict --quiet --site-dir "$site"
echo "[docs] the site builds with no warning ($(find "$site" -name '*.html' | wc -l) pages)"
