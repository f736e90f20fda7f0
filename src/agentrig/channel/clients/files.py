"""Other clients' files for one channel: write them (``agentrig channel export``) and read them
(``agentrig doctor --from``). Four formats, each with its own rule for the base URL:

    codex            ~/.codex/config.toml  [model_providers.X] base_url ends in /v1 (Codex appends
                     /chat/completions or /responses); the key's variable is named by env_key
    claude-code      ~/.claude/settings.json  env.ANTHROPIC_BASE_URL is the root, WITHOUT /v1 (the
                     Anthropic SDK appends /v1/messages); apiKeyHelper prints the key from a variable
    mini-swe-agent   a YAML config (model.model_name "openai/<id>", model.model_kwargs.api_base with
                     /v1, as litellm's openai provider wants) or mini's .env (MSWEA_MODEL_NAME,
                     OPENAI_API_BASE); litellm reads the key from OPENAI_API_KEY
    env              a .env for the openai SDK: OPENAI_BASE_URL with /v1, OPENAI_API_KEY

No key is ever written; a key read from a file stays in a private attribute (never dumped) and is
registered for redaction.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, PrivateAttr

from agentrig.config import Wire
from agentrig.errors import ConfigError
from agentrig.redact import redact_url, register_secret
from agentrig.channel.client import key_fingerprint, normalize_base_url

Format = Literal["codex", "claude-code", "mini-swe-agent", "env"]
FORMATS: tuple[str, ...] = ("codex", "claude-code", "mini-swe-agent", "env")

# where each client takes the base URL from, and what it appends to it
BASE_RULE: dict[str, tuple[str, str]] = {
    "codex": ("[model_providers.X] base_url", "includes /v1; Codex appends /responses (/chat/completions with wire_api \"chat\", Codex 0.94 and older)"),
    "claude-code": ("env.ANTHROPIC_BASE_URL", "the root without /v1; the Anthropic SDK appends /v1/messages"),
    "mini-swe-agent": ("model.model_kwargs.api_base", "includes /v1; litellm's openai provider appends /chat/completions"),
    "env": ("OPENAI_BASE_URL", "includes /v1; the openai SDK appends /chat/completions"),
}
# Codex's wire_api values by release: "chat" was deprecated (a warning) in late 2025 and removed in
# February 2026 (openai/codex#10157); releases after CODEX_LAST_CHAT refuse to start with it.
CODEX_LAST_CHAT = "0.94"
CODEX_CHAT_NOTE = (f'Codex {CODEX_LAST_CHAT} and older take wire_api = "chat"; later releases accept only "responses" '
                   "(POST <base_url>/responses) and refuse to start with \"chat\"")
LITELLM_PREFIXES = ("openai/", "hosted_vllm/", "litellm_proxy/", "openai_like/", "custom_openai/")
_VERSION_TAIL = re.compile(r"/v\d+(?:beta\d*|alpha\d*)?$")
_PRINTS_VAR = re.compile(r"""^\s*(?:printf\s+(?:%s|'%s'|"%s")|echo(?:\s+-n)?)\s+["']?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?["']?\s*$""")


class FoundValue(BaseModel):
    name: str  # where it is in the file
    value: str  # as fit to print: never a key (a fingerprint and a length at most)


class ClientFile(BaseModel):
    """What a client would use, as read from its file (and, where the client reads them, the
    environment)."""

    format: Format
    path: str
    base_url: str | None = None  # as the client would use it
    base_field: str = ""
    model: str | None = None  # the id the endpoint receives
    model_written: str | None = None  # as written (mini-swe-agent: with its provider prefix)
    model_field: str = ""
    key_var: str | None = None  # the variable the key comes from (environment or file)
    key_where: Literal["environment", "file", "none"] = "none"
    key_field: str = ""
    helper: str | None = None  # claude-code apiKeyHelper (a command; shown as written minus keys)
    wire: Wire = "chat"
    wire_field: str = ""
    variables: dict[str, bool] = {}  # names of variables the file sets → written with `export`?
    crlf: bool = False
    values: list[FoundValue] = []
    notes: list[str] = []
    _key: str | None = PrivateAttr(None)

    @property
    def key(self) -> str | None:
        return self._key

    def set_key(self, value: str | None) -> None:
        register_secret(value)
        self._key = value

    def openai_base(self) -> str | None:
        """The OpenAI-style base URL (…/v1) this file's endpoint is checked through."""
        if self.base_url is None:
            return None
        base = normalize_base_url(self.base_url)
        if self.format == "claude-code":
            return _VERSION_TAIL.sub("", base) + "/v1"
        return base


def key_summary(key: str | None) -> str:
    if not key:
        return "not set" if key is None else "empty"
    return f"set, {len(key)} characters, fingerprint {key_fingerprint(key)[:8]}"


# --------------------------------------------------------------------------------------- read
def parse_from(spec: str) -> tuple[str, Path]:
    fmt, sep, path = spec.partition(":")
    if not sep or fmt not in FORMATS or not path:
        raise ConfigError(f"--from {spec!r}: expected FORMAT:PATH with FORMAT one of {', '.join(FORMATS)} "
                          "(e.g. codex:~/.codex/config.toml)")
    return fmt, Path(path).expanduser()


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; give the path of the client's file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory; give the path of the client's file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None


def parse_dotenv(text: str) -> dict[str, tuple[str, bool]]:
    """``NAME=value`` lines as python-dotenv reads them: name → (value, written with ``export``)."""
    out: dict[str, tuple[str, bool]] = {}
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        exported = line.startswith("export ")
        if exported:
            line = line[len("export "):].lstrip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
            continue
        value = value.lstrip()
        if value[:1] in ("'", '"') and value.rfind(value[0]) > 0:
            q = value[0]
            value = value[1:value.rfind(q)]
            if q == '"':
                value = value.encode("utf-8").decode("unicode_escape") if "\\" in value else value
        else:
            value = re.sub(r"\s+#.*$", "", value).rstrip()
        out[name] = (value, exported)
    return out


def read_client_file(fmt: str, path: Path, env: dict[str, str]) -> ClientFile:
    text = _read_text(path)
    cf = ClientFile(format=fmt, path=str(path), crlf="\r\n" in text)  # type: ignore[arg-type]
    if fmt == "codex":
        _read_codex(cf, text, env)
    elif fmt == "claude-code":
        _read_claude(cf, text, env)
    elif fmt == "mini-swe-agent" and path.suffix.lower() in (".yaml", ".yml"):
        _read_mini_yaml(cf, text, env)
    else:
        _read_env_like(cf, text, env)
    cf.values = _values(cf)
    return cf


def _values(cf: ClientFile) -> list[FoundValue]:
    vals = [FoundValue(name=cf.base_field or "base URL", value=redact_url(cf.base_url) if cf.base_url else "not set"),
            FoundValue(name=cf.model_field or "model", value=cf.model_written or "not set")]
    if cf.key_where == "environment":
        vals.append(FoundValue(name=cf.key_field, value=f"${cf.key_var} from the environment: {key_summary(cf.key)}"))
    elif cf.key_where == "file":
        vals.append(FoundValue(name=cf.key_field, value=f"in the file: {key_summary(cf.key)}"))
    else:
        vals.append(FoundValue(name="key", value="no key and no key variable found"))
    vals.append(FoundValue(name=cf.wire_field or "wire", value=cf.wire))
    return vals


def _key_from_env(cf: ClientFile, var: str, field: str, env: dict[str, str]) -> None:
    cf.key_var, cf.key_where, cf.key_field = var, "environment", field
    cf.set_key(env.get(var))


def _read_codex(cf: ClientFile, text: str, env: dict[str, str]) -> None:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{cf.path}: not valid TOML: {exc}") from None
    top = dict(data)
    prof = data.get("profile")
    if isinstance(prof, str) and isinstance(data.get("profiles"), dict) and isinstance(data["profiles"].get(prof), dict):
        top.update(data["profiles"][prof])
        cf.notes.append(f"profile {prof!r} applied")
    pid = top.get("model_provider") or "openai"
    providers = data.get("model_providers") if isinstance(data.get("model_providers"), dict) else {}
    cf.model = cf.model_written = top.get("model") if isinstance(top.get("model"), str) else None
    cf.model_field = "model"
    cf.variables = {n: True for n in _names_in(data)}
    if pid in providers and isinstance(providers[pid], dict):
        p = providers[pid]
        cf.base_url, cf.base_field = p.get("base_url"), f"[model_providers.{pid}] base_url"
        wire = p.get("wire_api", "responses")
        cf.wire_field = f"[model_providers.{pid}] wire_api" + ("" if "wire_api" in p else " (not set: Codex's default)")
        cf.wire = wire if wire in ("chat", "responses") else "anthropic" if wire == "anthropic" else "chat"
        if wire not in ("chat", "responses"):
            cf.notes.append(f"wire_api = {wire!r} is not a value Codex knows (\"responses\"; \"chat\" in Codex "
                            f"{CODEX_LAST_CHAT} and older)")
        elif wire == "chat":
            cf.notes.append(CODEX_CHAT_NOTE)
        if isinstance(p.get("experimental_bearer_token"), str):
            cf.key_where, cf.key_field, cf.key_var = "file", f"[model_providers.{pid}] experimental_bearer_token", "CODEX_BEARER_TOKEN"
            cf.set_key(p["experimental_bearer_token"])
        elif isinstance(p.get("env_key"), str):
            name = p["env_key"]
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                register_secret(name)  # a key pasted where a name belongs: never printed
                cf.notes.append("ENV_KEY_NOT_A_NAME")
                cf.key_where, cf.key_field = "none", f"[model_providers.{pid}] env_key"
            else:
                _key_from_env(cf, name, f"[model_providers.{pid}] env_key", env)
        else:
            cf.key_field = f"[model_providers.{pid}] env_key"
    elif pid == "openai":
        cf.base_url = top.get("openai_base_url") or env.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        cf.base_field = "openai_base_url" if top.get("openai_base_url") else "the built-in openai provider ($OPENAI_BASE_URL)"
        cf.wire, cf.wire_field = "responses", "the built-in openai provider"
        _key_from_env(cf, "OPENAI_API_KEY", "the built-in openai provider's key", env)
    else:
        cf.notes.append(f"PROVIDER_MISSING:{pid}")
        cf.base_field = f"[model_providers.{pid}] base_url"


def _names_in(obj: object) -> set[str]:
    """Every ANTHROPIC_*/OPENAI_* name a TOML/JSON tree mentions (as a key or a string)."""
    out: set[str] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            out |= _names_in(k) | _names_in(v)
    elif isinstance(obj, list):
        for v in obj:
            out |= _names_in(v)
    elif isinstance(obj, str):
        out |= set(re.findall(r"\b((?:ANTHROPIC|OPENAI|CLAUDE)_[A-Z0-9_]+)", obj))
    return out


def _read_claude(cf: ClientFile, text: str, env: dict[str, str]) -> None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{cf.path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{cf.path}: a Claude Code settings file is a JSON object")
    block = data.get("env") if isinstance(data.get("env"), dict) else {}
    block = {str(k): str(v) for k, v in block.items()}
    cf.variables = {k: True for k in block}
    cf.wire, cf.wire_field = "anthropic", "Claude Code (Anthropic Messages API)"
    cf.base_url = block.get("ANTHROPIC_BASE_URL") or env.get("ANTHROPIC_BASE_URL")
    cf.base_field = "env.ANTHROPIC_BASE_URL" if "ANTHROPIC_BASE_URL" in block else "$ANTHROPIC_BASE_URL (environment)"
    if "ANTHROPIC_MODEL" in block or isinstance(data.get("model"), str):
        cf.model = cf.model_written = block.get("ANTHROPIC_MODEL") or data.get("model")
        cf.model_field = "env.ANTHROPIC_MODEL" if "ANTHROPIC_MODEL" in block else "model"
    for name in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"):
        if name in block:
            cf.key_var, cf.key_where, cf.key_field = name, "file", f"env.{name}"
            cf.set_key(block[name])
            return
    helper = data.get("apiKeyHelper")
    if isinstance(helper, str):
        m = _PRINTS_VAR.match(helper)  # only `printf %s "$VAR"` / `echo $VAR`: other commands are not run
        if m:
            _key_from_env(cf, m.group(1), f"apiKeyHelper (prints ${m.group(1)})", env)
            return
        cf.helper = helper
        cf.key_field = "apiKeyHelper"
        cf.notes.append("apiKeyHelper runs a command agentrig does not run; the key was not checked")
        return
    for name in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"):
        if env.get(name):
            _key_from_env(cf, name, f"${name} (environment)", env)
            return


def _read_mini_yaml(cf: ClientFile, text: str, env: dict[str, str]) -> None:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{cf.path}: not valid YAML: {exc}") from None
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict):
        raise ConfigError(f"{cf.path}: no `model:` section (mini-swe-agent reads model.model_name and model.model_kwargs)")
    kwargs = model.get("model_kwargs") if isinstance(model.get("model_kwargs"), dict) else {}
    cf.variables = {n: True for n in _names_in(data)}
    name = model.get("model_name") or env.get("MSWEA_MODEL_NAME")
    cf.model_field = "model.model_name" if model.get("model_name") else "$MSWEA_MODEL_NAME (environment)"
    _set_mini_model(cf, name, kwargs.get("custom_llm_provider"))
    base = kwargs.get("api_base") or kwargs.get("base_url")
    cf.base_field = "model.model_kwargs.api_base" if base else "$OPENAI_API_BASE (environment)"
    cf.base_url = base or env.get("OPENAI_API_BASE") or env.get("OPENAI_BASE_URL")
    if isinstance(kwargs.get("api_key"), str):
        cf.key_var, cf.key_where, cf.key_field = "OPENAI_API_KEY", "file", "model.model_kwargs.api_key"
        cf.set_key(kwargs["api_key"])
    else:
        _key_from_env(cf, "OPENAI_API_KEY", "OPENAI_API_KEY (litellm's openai provider)", env)


def _set_mini_model(cf: ClientFile, name: object, provider: object = None) -> None:
    cf.wire, cf.wire_field = "chat", "litellm's openai provider"
    if not isinstance(name, str):
        return
    cf.model_written = name
    prefix = next((p for p in LITELLM_PREFIXES if name.startswith(p)), None)
    if prefix:
        cf.model = name[len(prefix):]
    elif isinstance(provider, str):
        cf.model = name
    else:
        cf.model = name
        cf.notes.append("MODEL_NO_PREFIX")
    if name.startswith("anthropic/"):
        cf.wire, cf.wire_field = "anthropic", "litellm's anthropic provider (model_name anthropic/…)"
        cf.notes.append("model_name anthropic/… goes through litellm's Anthropic provider (key: ANTHROPIC_API_KEY); "
                        "agentrig checks the endpoint through its OpenAI-compatible chat completions only")


def _read_env_like(cf: ClientFile, text: str, env: dict[str, str]) -> None:
    pairs = parse_dotenv(text)
    cf.variables = {k: exp for k, (_, exp) in pairs.items()}
    get = lambda n: pairs[n][0] if n in pairs else None  # noqa: E731
    if cf.format == "mini-swe-agent":
        cf.model_field = "MSWEA_MODEL_NAME"
        _set_mini_model(cf, get("MSWEA_MODEL_NAME") or env.get("MSWEA_MODEL_NAME"))
        names = ("OPENAI_API_BASE", "OPENAI_BASE_URL")
    else:
        for n in ("OPENAI_MODEL", "MODEL_NAME", "MODEL", "LLM_MODEL"):
            if get(n):
                cf.model, cf.model_written, cf.model_field = get(n), get(n), n
                break
        names = ("OPENAI_BASE_URL", "OPENAI_API_BASE")
        cf.wire, cf.wire_field = "chat", "the openai SDK (chat completions)"
    for n in names:
        if get(n) is not None:
            cf.base_url, cf.base_field = get(n), n
            break
    else:
        cf.base_url = env.get(names[0]) or env.get(names[1]) or "https://api.openai.com/v1"
        cf.base_field = f"{names[0]} (not in the file: the environment, else the OpenAI API)"
    if get("OPENAI_API_KEY") is not None:
        cf.key_var, cf.key_where, cf.key_field = "OPENAI_API_KEY", "file", "OPENAI_API_KEY"
        cf.set_key(get("OPENAI_API_KEY"))
    else:
        _key_from_env(cf, "OPENAI_API_KEY", "OPENAI_API_KEY (not in the file)", env)
