#!/usr/bin/env bash
# Re-record the whole corpus: one lane per agent family, run side by side
# (recordings of one lane run one after another). Logs go to /tmp/corpus-logs.
#   usage: bash tools/corpus/record_all.sh [NAME_GLOB]   e.g. 'claude-*'
set -u
cd "$(dirname "$0")/../.."
glob="${1:-*}"
mkdir -p /tmp/corpus-logs
lane() {
  for s in "$@"; do
    n=$(basename "$s" .json)
    case "$n" in $glob) ;; *) continue ;; esac
    if MOCK_LOG=/tmp/corpus-logs/$n.mock.log python3 tools/corpus/record.py "$s" > /tmp/corpus-logs/$n.log 2>&1; then
      echo "ok     $n"
    else
      echo "FAILED $n (see /tmp/corpus-logs/$n.log)"
    fi
  done
}
S=tools/corpus/scripts
lane $S/bash-*.json $S/zsh-*.json $S/fish-*.json $S/python-*.json $S/node-*.json $S/sqlite-*.json $S/claude-*.json &
lane $S/codex-*.json $S/aider-*.json &
lane $S/gemini-*.json &
wait
