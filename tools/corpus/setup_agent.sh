#!/usr/bin/env bash
# Prepare a private HOME and config for one agent so that it starts without
# onboarding/login/trust dialogs, talks only to the mock server ($MOCK_URL)
# and has telemetry/update checks off. Called by record.py ("setup" in a script)
# with HOME, MOCK_URL and the working directory already set.
#   usage: setup_agent.sh claude|codex|gemini|aider|qwen|opencode|vibe|grok
set -euo pipefail
agent="$1"
: "${HOME:?}" "${MOCK_URL:?}"
work="$(pwd)"
mkdir -p "$HOME"

case "$agent" in
claude)
  rm -rf "$HOME/.claude" "$HOME/.claude.json"
  mkdir -p "$HOME/.claude"
  cat > "$HOME/.claude.json" <<EOF
{
  "hasCompletedOnboarding": true,
  "lastOnboardingVersion": "9.9.9",
  "numStartups": 5,
  "theme": "dark",
  "autoUpdates": false,
  "hasSeenTasksHint": true,
  "hasAcknowledgedCostThreshold": true,
  "bypassPermissionsModeAccepted": false,
  "shiftEnterKeyBindingInstalled": true,
  "officialMarketplaceAutoInstallAttempted": true,
  "projects": {
    "$work": {
      "allowedTools": [],
      "hasTrustDialogAccepted": true,
      "hasCompletedProjectOnboarding": true,
      "projectOnboardingSeenCount": 5,
      "hasClaudeMdExternalIncludesApproved": false
    }
  }
}
EOF
  cat > "$HOME/.claude/settings.json" <<EOF
{
  "autoUpdates": false,
  "includeCoAuthoredBy": false,
  "env": {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}
}
EOF
  ;;
codex)
  rm -rf "$HOME/.codex"
  mkdir -p "$HOME/.codex"
  cat > "$HOME/.codex/config.toml" <<EOF
model = "mock-model"
model_provider = "mock"
approval_policy = "on-request"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false
hide_agent_reasoning = true
disable_paste_burst = true

[model_providers.mock]
name = "Mock"
base_url = "$MOCK_URL/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[projects."$work"]
trust_level = "trusted"

[analytics]
enabled = false

[feedback]
enabled = false

[notice]
hide_full_access_warning = true
hide_rate_limit_model_nudge = true

[tui]
animations = true
EOF
  ;;
gemini)
  rm -rf "$HOME/.gemini"
  mkdir -p "$HOME/.gemini"
  cat > "$HOME/.gemini/settings.json" <<EOF
{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true, "checkpointing": {"enabled": false}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "ui": {"hideTips": true, "hideBanner": false},
  "ide": {"enabled": false, "hasSeenNudge": true},
  "model": {"name": "gemini-2.5-flash"},
  "selectedAuthType": "gemini-api-key",
  "usageStatisticsEnabled": false,
  "disableAutoUpdate": true,
  "hideTips": true
}
EOF
  ;;
aider)
  rm -rf "$HOME/.aider" "$HOME/.aider.conf.yml"
  cat > "$work/.aider.model.settings.yml" <<EOF
- name: openai/mock-model
  edit_format: diff
  use_repo_map: false
  streaming: true
EOF
  cat > "$work/.aider.model.metadata.json" <<EOF
{"openai/mock-model": {"max_input_tokens": 128000, "max_output_tokens": 8192, "input_cost_per_token": 0, "output_cost_per_token": 0, "litellm_provider": "openai", "mode": "chat"}}
EOF
  ;;
qwen)
  # Qwen Code (a Gemini CLI fork): the OpenAI-compatible endpoint comes from OPENAI_BASE_URL,
  # OPENAI_API_KEY and OPENAI_MODEL in the environment (it ignores NO_PROXY: run it with no proxy
  # variables); this only turns off telemetry, usage statistics and update checks.
  rm -rf "$HOME/.qwen"
  mkdir -p "$HOME/.qwen"
  cat > "$HOME/.qwen/settings.json" <<EOF
{
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "ui": {"hideTips": true},
  "ide": {"enabled": false, "hasSeenNudge": true}
}
EOF
  ;;
opencode)
  # OpenCode: a provider of its own for the mock's Chat Completions endpoint.
  rm -rf "$HOME/.config/opencode" "$HOME/.local/share/opencode" "$HOME/.local/state/opencode"
  mkdir -p "$HOME/.config/opencode"
  cat > "$HOME/.config/opencode/opencode.json" <<EOF
{
  "\$schema": "https://opencode.ai/config.json",
  "model": "mock/mock-model",
  "autoupdate": false,
  "share": "disabled",
  "provider": {
    "mock": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Mock",
      "options": {"baseURL": "$MOCK_URL/v1", "apiKey": "mock-key"},
      "models": {"mock-model": {"name": "Mock Model"}}
    }
  }
}
EOF
  ;;
vibe)
  # Mistral Vibe (PyPI mistral-vibe, Textual, alternate screen): a provider of its own for the
  # mock's Chat Completions endpoint (backend "generic"), its key from MOCK_API_KEY; telemetry,
  # update checks, notifications and the model catalogue off. Session titles off: each would be a
  # second request per question, which blurs when the reply's request ended.
  rm -rf "$HOME/.vibe"
  mkdir -p "$HOME/.vibe"
  cat > "$HOME/.vibe/config.toml" <<EOF
active_model = "mock"
enable_telemetry = false
enable_update_checks = false
enable_notifications = false
show_greeting = false
experimental_enable_model_catalog = false

[session_logging]
generate_titles = false

[[providers]]
name = "mock"
api_base = "$MOCK_URL/v1"
api_key_env_var = "MOCK_API_KEY"
backend = "generic"

[[models]]
name = "mock-model"
provider = "mock"
alias = "mock"
EOF
  ;;
grok)
  # Grok CLI (npm @vibe-kit/grok-cli, Ink, inline): the endpoint comes from GROK_BASE_URL,
  # GROK_API_KEY and GROK_MODEL in the environment; nothing to write.
  ;;
*) echo "unknown agent $agent" >&2; exit 2 ;;
esac
rm -f "$work/corpus-marker.txt"
