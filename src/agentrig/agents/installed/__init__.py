"""Installed agents (mini-swe-agent, Codex CLI, Claude Code, a user's own command) on terminal tasks."""
