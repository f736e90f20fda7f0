"""Other clients' files (Codex, Claude Code, mini-swe-agent, .env): written from a channel, read and checked."""
